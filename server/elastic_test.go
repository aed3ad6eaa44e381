package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"shade/elastic"
	"shade/engine"
	"shade/speculate"
)

// TestElasticPolicy: with a governor, background requests run under it and
// the policy endpoint switches its policy at run time.
func TestElasticPolicy(t *testing.T) {
	stories(t) // skips without the conformance pack
	path := filepath.Join(conformanceDir, "stories260K.gguf")
	e, err := engine.Load(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.LoadDraft(path); err != nil {
		t.Fatal(err)
	}
	st, err := e.ElasticStart(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := st.Governor(elastic.Balanced)
	s := New(e, Options{Spec: speculate.Config{Mode: speculate.ModeChain, DraftMax: 4}, Elastic: g})
	ts := httptestServer(t, s)
	if p := s.sched.getPolicy(); p != PolicyElastic {
		t.Fatalf("a balanced governor should start the server in elastic, got %s", p)
	}
	for _, tc := range []struct {
		body, policy, flavor string
		gov                  elastic.Policy
	}{
		{`{"policy":"ui-first"}`, "elastic", "ui-first", elastic.UIFirst},
		{`{"policy":"full"}`, "full", "ui-first", elastic.Off},
		{`{"policy":"elastic","elastic":"balanced"}`, "elastic", "balanced", elastic.Balanced},
		{`{"policy":"paused"}`, "paused", "balanced", elastic.Off},
		{`{"policy":"elastic"}`, "elastic", "balanced", elastic.Balanced},
	} {
		resp, body := post(t, ts+"/v1/shade/policy", tc.body)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"policy":"`+tc.policy+`"`) ||
			!strings.Contains(string(body), `"elastic":"`+tc.flavor+`"`) || !strings.Contains(string(body), `"effective":"`+tc.policy+`"`) {
			t.Fatalf("%s: %d %s", tc.body, resp.StatusCode, body)
		}
		if got := g.Policy(); got != tc.gov {
			t.Errorf("%s: governor policy %v, want %v", tc.body, got, tc.gov)
		}
	}
	if resp, body := post(t, ts+"/v1/shade/policy", `{"policy":"elastic","elastic":"off"}`); resp.StatusCode != 400 {
		t.Errorf("elastic off accepted: %d %s", resp.StatusCode, body)
	}
	resp, body := post(t, ts+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":24,"priority":"background"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("background completion: %d %s", resp.StatusCode, body)
	}
	if st := g.GovernorStats(); st.Readings == 0 {
		t.Errorf("the background request did not run under the governor: %+v", st)
	}
	r, err := http.Get(ts + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(r.Body)
	r.Body.Close()
	for _, want := range []string{"shade_contention_score_p95", "shade_elastic_control_output", `shade_controller_actions_total{action="preempt"}`,
		"shade_elastic_sleep_seconds_total", "shade_elastic_guardrail_deficit_tokens", `shade_background_policy{policy="elastic"} 1`} {
		if !strings.Contains(string(mb), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func httptestServer(t *testing.T, s *Server) string {
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts.URL
}

// A server of an engine opened with a policy runs its background requests
// under the engine's governor without being handed one.
func TestElasticFromEngine(t *testing.T) {
	stories(t)
	path := filepath.Join(conformanceDir, "stories260K.gguf")
	e, err := engine.Open(context.Background(), path, engine.Options{Threads: 1, Draft: path, Spec: speculate.ModeChain, Policy: elastic.UIFirst})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := New(e, Options{Spec: speculate.Config{Mode: speculate.ModeChain, DraftMax: 4}})
	defer s.Close()
	if s.opt.Elastic != e.Governor || s.sched.getPolicy() != PolicyElastic {
		t.Fatalf("governor %p (engine's %p), policy %s", s.opt.Elastic, e.Governor, s.sched.getPolicy())
	}
}
