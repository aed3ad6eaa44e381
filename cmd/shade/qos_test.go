package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shade/qos"
)

// bench qos runs `EXECUTABLE fg …` as the foreground: in this test binary
// that must be the fg command, not the test suite again.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "fg" {
		os.Exit(runMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestFg(t *testing.T) {
	frames := filepath.Join(t.TempDir(), "frames.csv")
	code, out, errOut := shade(t, "fg", "--profile", "game", "--seconds", "0.3", "--units", "800", "--cpu", "-1",
		"--buffer-mib", "16", "--json", "--frames", frames)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep qos.ForegroundReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if rep.Profile != "game" || rep.Units != 800 || rep.Summary.Frames < 20 || rep.BufferBytes != 16<<20 {
		t.Errorf("report %+v", rep)
	}
	got, err := qos.ReadFramesFile(frames)
	if err != nil || len(got) != rep.Summary.Frames {
		t.Errorf("frames file: %v, %d frames, summary says %d", err, len(got), rep.Summary.Frames)
	}
	code, out, _ = shade(t, "fg", "--profile", "scroll", "--seconds", "0.2", "--units", "500", "--cpu", "-1", "--buffer-mib", "8")
	for _, want := range []string{"profile     scroll", "jank", "frame time  mean"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("text output lacks %q: exit %d\n%s", want, code, out)
		}
	}
	for _, bad := range [][]string{
		{"--profile", "doom"},
		{"--seconds", "0"},
		{"--units", "-3"},
		{"--hz", "5", "--units", "100", "--seconds", "0.1"},
		{"--buffer-mib", "-1"},
		{"stray"},
	} {
		if code, _, _ := shade(t, append([]string{"fg", "--cpu", "-1"}, bad...)...); code == 0 {
			t.Errorf("fg %v succeeded", bad)
		}
	}
}

func TestBenchQoSFlags(t *testing.T) {
	for _, bad := range [][]string{
		{"--policies", "native,bogus"},
		{"--profiles", "scroll,doom"},
		{"--reps", "0"},
		{"--seconds", "-1"},
		{"--duty", "1.5"},
		{"--fg-cpu", "0", "--bg-cpu", "0"},
		{"--window", "1us"},
		{"--draft", "x.gguf", "--policies", "ar"},
		{"--pair", "70b"},
		{"--warm-up", "-1s"},
	} {
		code, _, errOut := shade(t, append([]string{"bench", "qos"}, bad...)...)
		if code == 0 {
			t.Errorf("bench qos %v succeeded", bad)
		} else if errOut == "" {
			t.Errorf("bench qos %v: no message", bad)
		}
	}
}

// The whole pipeline on the tiny conformance model: the foreground as a
// child process on one CPU, the LLM on the other, a table, JSON and plots.
func TestBenchQoSEndToEnd(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	if qos.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	out := t.TempDir()
	code, stdout, errOut := shade(t, "bench", "qos", "-m", model, "--policies", "native,ar,chunk-sleep", "--profiles", "video",
		"--reps", "1", "--seconds", "0.6", "--units", "1500", "--buffer-mib", "16", "--max-tokens", "32",
		"--fg-cpu", "1", "--bg-cpu", "0", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"video    native", "video    ar", "video    chunk-sleep", "jank %"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "qos.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep qosOutput
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 3 || rep.Rows[1].Policy != "ar" || rep.Rows[1].TokPerS <= 0 || rep.Rows[0].TokPerS != 0 {
		t.Fatalf("rows %+v", rep.Rows)
	}
	if rep.Rows[1].Runs[0].Samples == 0 {
		t.Error("the LLM workload recorded no layer timings")
	}
	svg, err := os.ReadFile(filepath.Join(out, "qos-video.svg"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name
	}
	if err := xml.Unmarshal(svg, &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Errorf("plot: %v, root %v", err, doc.XMLName)
	}
	if _, err := os.Stat(filepath.Join(out, "qos-video-ar-timeline.svg")); err != nil {
		t.Errorf("no timeline plot: %v", err)
	}
	for _, p := range []string{"native", "ar", "chunk-sleep"} {
		if !strings.Contains(string(svg), `data-name="`+p+`"`) {
			t.Errorf("plot has no series %s", p)
		}
	}
}
