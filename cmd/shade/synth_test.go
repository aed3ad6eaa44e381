package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestSynthDraft(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.gguf")
	draft := filepath.Join(dir, "draft.gguf")
	code, out, errOut := shade(t, "synth", "--shape", "tiny-qwen3", "--type", "Q8_0", "--tail-from", "1", "--tail-scale", "0", "-o", target, "--quiet")
	if code != 0 || !strings.Contains(out, "layers 1+ scaled by 0") {
		t.Fatalf("exit %d: %q %q", code, out, errOut)
	}
	code, out, errOut = shade(t, "synth", "--draft-of", target, "--layers", "1", "-o", draft, "--agreement", "100")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Layer 1 adds nothing: the 1-layer draft always agrees.
	if !strings.Contains(out, "first 1 of 2 layers") || !strings.Contains(out, "agreement 1.000") {
		t.Errorf("stdout %q", out)
	}
	code, out, _ = shade(t, "inspect", draft)
	if code != 0 || !strings.Contains(out, "self-speculative draft") {
		t.Errorf("inspect of the draft:\n%s", out)
	}
	if code, _, errOut = shade(t, "run", "-m", draft, "-p", "Hello", "-n", "4"); code != 0 {
		t.Errorf("run on the draft: %s", errOut)
	}
}

func TestSynthDraftStories(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	draft := filepath.Join(t.TempDir(), "draft.gguf")
	code, out, errOut := shade(t, "synth", "--draft-of", model, "--layers", "4", "-o", draft, "--agreement", "200")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	m := regexp.MustCompile(`agreement ([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no agreement in %q", out)
	}
	if a, _ := strconv.ParseFloat(m[1], 64); a <= 0 || a >= 1 {
		t.Errorf("stories260K 4-layer draft: agreement %v, want strictly between 0 and 1", a)
	}
	t.Log(strings.TrimSpace(out))
}

func TestSynthDraftErrors(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.gguf")
	if code, _, errOut := shade(t, "synth", "--shape", "tiny", "-o", target, "--quiet"); code != 0 {
		t.Fatal(errOut)
	}
	out := filepath.Join(dir, "d.gguf")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"synth", "--draft-of", target, "--layers", "2", "-o", out}, 1, "1 to 1 of the target's 2 layers"},
		{[]string{"synth", "--draft-of", target, "--layers", "0", "-o", out}, 1, "1 to 1"},
		{[]string{"synth", "--draft-of", target, "-o", out}, 2, "Usage"},
		{[]string{"synth", "--draft-of", target, "--layers", "1"}, 2, "Usage"},
		{[]string{"synth", "--draft-of", target, "--layers", "1", "--shape", "tiny", "-o", out}, 1, "--shape does not apply"},
		{[]string{"synth", "--draft-of", filepath.Join(dir, "missing.gguf"), "--layers", "1", "-o", out}, 1, "no such file"},
		{[]string{"synth", "--draft-of", target, "--layers", "1", "--agreement", "-3", "-o", out}, 1, "--agreement -3"},
		{[]string{"synth", "--shape", "tiny", "--layers", "1", "-o", out}, 1, "--layers applies only to --draft-of"},
		{[]string{"synth", "--shape", "tiny", "--tail-scale", "0.5", "-o", out}, 1, "needs --tail-from"},
		{[]string{"synth", "--shape", "tiny", "--tail-from", "2", "--tail-scale", "0.5", "-o", out}, 1, "tail from layer 2"},
		{[]string{"synth", "--shape", "tiny", "--tail-from", "1", "--tail-scale", "-1", "-o", out}, 1, "tail scale -1"},
	}
	for _, tc := range cases {
		code, _, errOut := shade(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("shade %s: exit %d (want %d), stderr %q (want %q)", strings.Join(tc.args, " "), code, tc.code, errOut, tc.want)
		}
	}
	// No error leaves a file behind: only the target is there.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files after errors: %v", ents)
	}
}

func TestSynthHelp(t *testing.T) {
	code, _, errOut := shade(t, "synth", "-h")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--draft-of TARGET", "--layers K", "--tail-from K", "--tail-scale S", "--agreement N", "--shape", "--vocab"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("synth -h lacks %q:\n%s", want, errOut)
		}
	}
}
