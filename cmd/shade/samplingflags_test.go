package main

import (
	"context"
	"io"
	"net/http"
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

// TestServeAlias: --alias names the model in /v1/models and responses;
// --alias and a different --model-id are refused.
func TestServeAlias(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	if code, _, errOut := shade(t, "serve", "-m", model, "--alias", "a", "--model-id", "b"); code == 0 || !strings.Contains(errOut, "--alias") {
		t.Errorf("--alias a --model-id b: exit %d %q", code, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, code, _ := startServe(t, ctx, "-m", model, "--alias", "gpt-4o-mini")
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"id":"gpt-4o-mini"`) {
		t.Errorf("/v1/models: %s", b)
	}
	cancel()
	<-code
}
