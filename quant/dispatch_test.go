package quant

import (
	"strings"
	"testing"
)

// TestKernelSets checks the named kernel sets: generic first and always
// there, each name selectable and reported by Kernels, an unknown name
// refused with the available ones listed and the set in use left alone.
func TestKernelSets(t *testing.T) {
	t.Cleanup(func() { UseGeneric(false) }) // after the environment is restored
	t.Setenv(KernelsEnv, "")
	sets := KernelSets()
	if len(sets) == 0 || sets[0] != "generic" {
		t.Fatalf("KernelSets() = %q, want generic first", sets)
	}
	for _, set := range sets {
		if err := UseKernels(set); err != nil {
			t.Fatalf("UseKernels(%q): %v", set, err)
		}
		if got := strings.TrimSuffix(Kernels(), "+panels"); got != set {
			t.Errorf("UseKernels(%q): Kernels() = %q", set, Kernels())
		}
	}
	before := Kernels()
	err := UseKernels("no-such-set")
	if err == nil || !strings.Contains(err.Error(), strings.Join(sets, ", ")) {
		t.Errorf("UseKernels(no-such-set) = %v, want an error listing %q", err, sets)
	}
	if Kernels() != before {
		t.Errorf("a refused UseKernels changed the set from %q to %q", before, Kernels())
	}
	UseGeneric(true)
	if Kernels() != "generic" {
		t.Errorf("Kernels() = %q after UseGeneric(true)", Kernels())
	}
	UseGeneric(false)
	if best := sets[len(sets)-1]; strings.TrimSuffix(Kernels(), "+panels") != best {
		t.Errorf("Kernels() = %q after UseGeneric(false), want the best set %q", Kernels(), best)
	}
}

// TestKernelsEnv checks SHADE_KERNELS as UseGeneric(false) (what package
// init runs) reads it: a valid name is used, an invalid one keeps the best
// set and is reported by KernelsEnvError, not a panic.
func TestKernelsEnv(t *testing.T) {
	t.Cleanup(func() { UseGeneric(false) }) // after the environment is restored
	sets := KernelSets()
	best := sets[len(sets)-1]
	for _, tc := range []struct {
		env, want string
		bad       bool
	}{
		{"generic", "generic", false},
		{best, best, false},
		{"", best, false},
		{"avx1024", best, true},
	} {
		t.Setenv(KernelsEnv, tc.env)
		UseGeneric(false)
		if got := strings.TrimSuffix(Kernels(), "+panels"); got != tc.want {
			t.Errorf("%s=%q: Kernels() = %q, want %q", KernelsEnv, tc.env, Kernels(), tc.want)
		}
		if err := KernelsEnvError(); (err != nil) != tc.bad || tc.bad && !strings.Contains(err.Error(), KernelsEnv) {
			t.Errorf("%s=%q: KernelsEnvError() = %v", KernelsEnv, tc.env, err)
		}
	}
}
