package qos

import (
	"fmt"
	"slices"
	"strings"
)

// Policy is one way of running (or not running) a background workload
// (the LLM), as a row of `shade bench qos`. New builds a fresh workload
// for one run (a controller starts from scratch every run); it fails when
// the policy cannot run (no model loaded). The policies themselves are
// other packages' (package bench has the LLM's): this one measures them.
type Policy struct {
	Name    string
	Summary string
	// Native marks a policy that runs nothing beside the foreground: its
	// frames are the reference that slowdowns are measured against.
	Native bool
	New    func() (Background, error)
}

// LookupPolicies picks from all the policies a comma-separated list names,
// in the list's order, once each; "" or "all" is all of them.
func LookupPolicies(list string, all []Policy) ([]Policy, error) {
	if list == "" || list == "all" {
		return slices.Clone(all), nil
	}
	var out []Policy
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(all, func(p Policy) bool { return p.Name == name })
		if i < 0 {
			var names []string
			for _, p := range all {
				names = append(names, p.Name)
			}
			return nil, fmt.Errorf("qos: unknown policy %q (known: %s)", name, strings.Join(names, ", "))
		}
		if !slices.ContainsFunc(out, func(p Policy) bool { return p.Name == name }) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

// Native runs no LLM: the foreground alone.
func Native() Policy {
	return Policy{Name: "native", Summary: "no background LLM", Native: true,
		New: func() (Background, error) { return Idle(), nil }}
}
