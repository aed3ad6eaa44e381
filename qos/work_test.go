package qos

import (
	"context"
	"runtime"
	"testing"
	"time"
)

func TestBlendComposesEveryLayer(t *testing.T) {
	for _, layers := range []int{1, 2, 3, 5} {
		n := 3 * blendBlock
		dst := make([]uint64, n)
		var srcs [][]uint64
		for k := range layers {
			s := make([]uint64, n)
			for i := range s {
				s[i] = uint64(i*(k+7) + k)
			}
			srcs = append(srcs, s)
		}
		blend(dst, srcs, 0x55)
		for i := range dst {
			want := srcs[0][i] ^ 0x55
			for _, s := range srcs[1:] {
				want += s[i]
			}
			if dst[i] != want {
				t.Fatalf("%d layers: word %d is %#x, want %#x", layers, i, dst[i], want)
			}
		}
	}
}

func TestSimLanesAreDisjointAndSkewed(t *testing.T) {
	prof, _ := LookupProfile("scroll")
	s, err := NewSim(prof, 120, 8<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.lanes) != prof.Layers+1 {
		t.Fatalf("%d lanes for %d layers", len(s.lanes), prof.Layers)
	}
	for i, l := range s.lanes {
		if len(l) == 0 || len(l)%blendBlock != 0 || len(l) != len(s.lanes[0]) {
			t.Fatalf("lane %d has %d words", i, len(l))
		}
		if i == 0 {
			continue
		}
		// Offsets between lanes must not be a multiple of 4 KiB (the
		// streams would share cache sets).
		gap := (cap(s.lanes[i-1]) - cap(s.lanes[i])) * 8
		if gap <= len(l)*8 || gap%4096 == 0 {
			t.Errorf("lanes %d and %d start %d bytes apart (lane %d bytes)", i-1, i, gap, len(l)*8)
		}
	}
	if _, err := NewSim(Profile{Name: "x", MemBytes: 64, Layers: 0}, 120, 8<<20, 1); err == nil {
		t.Error("a composition without layers accepted")
	}
	if _, err := NewSim(Profile{Name: "x", MemBytes: 64, Layers: MaxLayers + 1}, 120, 8<<20, 1); err == nil {
		t.Error("too many layers accepted")
	}
	if _, err := NewSim(Profile{Name: "x", MemBytes: 64, Layers: 1, FlingFrames: 10}, 120, 8<<20, 1); err == nil {
		t.Error("flings without rests accepted")
	}
}

// Gesture spells: runs of active frames and of resting frames (which
// compose nothing) with lengths around the profile's, the same for a seed.
func TestScheduleGestures(t *testing.T) {
	prof, _ := LookupProfile("scroll")
	a, b := newSchedule(prof, 7, 1), newSchedule(prof, 7, 1)
	var spells [2][]int
	run, resting := 0, false
	restFrames := 0
	const frames = 60000
	for i := range frames {
		w, w2 := a.next(i), b.next(i)
		if w != w2 {
			t.Fatalf("frame %d: %+v and %+v from one seed", i, w, w2)
		}
		if i == 0 && w.compose == 0 {
			t.Fatal("the first frame rests")
		}
		r := w.compose == 0
		if r {
			restFrames++
			if w.compute <= 0 || w.compute > prof.RestCompute*5 {
				t.Fatalf("resting frame %d computes %v", i, w.compute)
			}
		}
		if i > 0 && r != resting {
			spells[b2i(resting)] = append(spells[b2i(resting)], run)
			run = 0
		}
		resting = r
		run++
	}
	for k, want := range []int{prof.FlingFrames, prof.RestFrames} {
		if len(spells[k]) < 50 {
			t.Fatalf("only %d spells of kind %d", len(spells[k]), k)
		}
		med := medianOf(intsToFloats(spells[k]))
		if med < 0.7*float64(want) || med > 1.3*float64(want) {
			t.Errorf("spell kind %d: median %v frames, want about %d", k, med, want)
		}
	}
	share := float64(restFrames) / frames
	if want := float64(prof.RestFrames) / float64(prof.RestFrames+prof.FlingFrames); share < want-0.1 || share > want+0.1 {
		t.Errorf("%.2f of frames rest, want about %.2f", share, want)
	}
	steady, _ := LookupProfile("video")
	s := newSchedule(steady, 1, 1)
	for i := range 1000 {
		if w := s.next(i); w.compose == 0 || w.compute != w.compose {
			t.Fatalf("video frame %d: %+v", i, w)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func intsToFloats(x []int) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// A background that takes a while to get going holds the foreground back
// until it says it is ready, and its result counts from then.
func TestPairWarmUp(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the harness pins CPUs: Linux only")
	}
	fgCPU, bgCPU := cpus()
	const prefill = 300 * time.Millisecond
	var readyAt int64
	bg := BackgroundFunc(func(ctx context.Context) (BackgroundResult, error) {
		time.Sleep(prefill)
		readyAt = Now()
		if !Ready(ctx) {
			t.Error("the first Ready call did not start the run")
		}
		if Ready(ctx) {
			t.Error("a second Ready call started it again")
		}
		<-ctx.Done()
		return BackgroundResult{Tokens: 1}, nil
	})
	pair := Pair{Profile: "video", Duration: 500 * time.Millisecond, Units: 500, FgCPU: fgCPU, BgCPU: bgCPU,
		Command: testCommand, TempDir: t.TempDir(), WarmUp: 10 * time.Second}
	res, err := pair.Run(context.Background(), bg)
	if err != nil {
		t.Fatal(err)
	}
	if first := res.Foreground.Frames[0].Start; first < readyAt {
		t.Errorf("the first frame started %v before the background was ready", time.Duration(readyAt-first))
	}
	if w := res.Background.Wall; w >= prefill+time.Duration(res.Foreground.Summary.Seconds*float64(time.Second))+2*time.Second || w < 400*time.Millisecond {
		t.Errorf("background wall %v: should count from its readiness", w)
	}
	if res.Background.Active != res.Background.Wall {
		t.Errorf("active %v, wall %v", res.Background.Active, res.Background.Wall)
	}
	if Ready(context.Background()) {
		t.Error("Ready outside a harness reported a start")
	}
}
