package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRunDRAMBudget(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	_, ref, _ := shade(t, "run", "-m", model, "-p", "Once upon a time", "-n", "24", "--temp", "0")
	for _, budget := range []string{"0%", "50%", "1KiB"} {
		code, out, errOut := shade(t, "run", "-m", model, "-p", "Once upon a time", "-n", "24", "--temp", "0", "--dram-budget", budget, "--read-ahead", "1")
		if code != 0 {
			t.Fatalf("--dram-budget %s: exit %d: %s", budget, code, errOut)
		}
		if out != ref {
			t.Errorf("--dram-budget %s: output %q, resident %q", budget, out, ref)
		}
		for _, want := range []string{"dram budget", "layers streamed", "per generated token", "I/O wait"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("--dram-budget %s: stderr %q lacks %q", budget, errOut, want)
			}
		}
		if budget == "1KiB" && !strings.Contains(errOut, "exceeded") {
			t.Errorf("a budget below the globals gives no warning: %q", errOut)
		}
	}
	code, _, errOut := shade(t, "run", "-m", model, "-p", "Once", "-n", "4", "--dram-budget", "0%", "--json")
	var st struct {
		Stream *struct {
			BytesRead int64 `json:"bytes_read"`
			Passes    int64 `json:"passes"`
		} `json:"stream"`
	}
	if code != 0 || json.Unmarshal([]byte(errOut[strings.LastIndex(strings.TrimSpace(errOut), "\n")+1:]), &st) != nil || st.Stream == nil || st.Stream.BytesRead == 0 {
		t.Errorf("--json stream stats: exit %d, %q", code, errOut)
	}
	code, _, errOut = shade(t, "run", "-m", model, "-p", "Once", "-n", "4", "--dram-budget", "100%")
	if code != 0 || strings.Contains(errOut, "layers streamed") || !strings.Contains(errOut, "0 streamed") {
		t.Errorf("100%%: exit %d, %q", code, errOut)
	}
	for _, bad := range [][]string{{"--dram-budget", "120%"}, {"--dram-budget", "lots"}, {"--read-ahead", "-1"}, {"--stream-layout", "zigzag"}} {
		args := append([]string{"run", "-m", model, "-p", "Once", "-n", "2"}, bad...)
		if code, _, errOut := shade(t, args...); code == 0 || !strings.Contains(errOut, strings.TrimPrefix(bad[0], "--")) {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
}
