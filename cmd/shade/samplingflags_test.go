package main

import (
	"strings"
	"testing"
)

// TestRunStopAndSamplingFlags: --stop ends the text before the sequence
// (the stats say "stop"), the penalty and bias flags change greedy
// output, and bad values are refused with a message.
func TestRunStopAndSamplingFlags(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	base := []string{"run", "-m", model, "-p", "Once upon a time", "-n", "40", "--temp", "0"}
	code, full, errOut := shade(t, base...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	cut := strings.Index(full, ",")
	if cut < 0 {
		t.Fatalf("no comma in %q", full)
	}
	code, out, errOut := shade(t, append(base, "--stop", ",", "--stop", `\n\n`)...)
	if code != 0 || out != full[:cut]+"\n" || !strings.Contains(errOut, "stop stop") {
		t.Errorf("--stop ,: exit %d, %q (%s), want %q", code, out, errOut, full[:cut])
	}
	for _, flags := range [][]string{{"--presence-penalty", "1.5"}, {"--frequency-penalty", "1"}, {"--logit-bias", "410=-100,432=-100"}} {
		code, out, errOut := shade(t, append(base, flags...)...)
		if code != 0 || out == full {
			t.Errorf("%v: exit %d (%s), output unchanged: %v", flags, code, errOut, out == full)
		}
	}
	for _, flags := range [][]string{{"--presence-penalty", "3"}, {"--logit-bias", "x=1"}, {"--logit-bias", "5=200"}, {"--logit-bias", "99999=1"}, {"--stop", ""}} {
		if code, _, errOut := shade(t, append(base, flags...)...); code == 0 || errOut == "" {
			t.Errorf("%v accepted", flags)
		}
	}
}
