package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"shade/engine"
	"shade/panelcache"
	"shade/quant"
)

// TestPanelsFlags checks how --panels, --panel-cache and --repack set where
// row panels live (the engine's options), and that a bad value is refused before anything loads.
func TestPanelsFlags(t *testing.T) {
	defer quant.UseRepack(true)
	for _, tc := range []struct {
		args   []string
		mode   panelcache.Mode
		dir    string
		errMsg string
	}{
		{nil, panelcache.Cache, "", ""},
		{[]string{"--panels=memory"}, panelcache.Memory, "", ""},
		{[]string{"--panels=off"}, panelcache.Off, "", ""},
		{[]string{"--panel-cache", "/x/y"}, panelcache.Cache, "/x/y", ""},
		{[]string{"--repack=false"}, panelcache.Off, "", ""},
		{[]string{"--panels=memory", "--repack=false"}, panelcache.Off, "", ""},
		{[]string{"--panels=disk"}, 0, "", "--panels"},
	} {
		var stderr bytes.Buffer
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(&stderr)
		bf := addBudgetFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := bf.check()
		if tc.errMsg != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errMsg) {
				t.Errorf("%v: error %v, want one about %s", tc.args, err, tc.errMsg)
			}
			continue
		}
		var eo engine.Options
		bf.set(&eo)
		o := *eo.Panels
		if err != nil || o.Mode != tc.mode || o.Dir != tc.dir || quant.PanelsInUse() && tc.mode == panelcache.Off {
			t.Errorf("%v: %v, mode %v dir %q; want %v %q", tc.args, err, o.Mode, o.Dir, tc.mode, tc.dir)
		}
		if o.Warn("w"); !strings.Contains(stderr.String(), "shade: warning: w") {
			t.Errorf("%v: warning went elsewhere: %q", tc.args, stderr.String())
		}
	}
}
