package qos

import (
	"context"
	"runtime"
	"testing"
	"time"
)

func TestPinProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pinning is Linux-only")
	}
	restore, err := PinProcessTemporarily(LastCPU())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := restore(); err != nil {
			t.Error(err)
		}
	}()
	// A thread created after pinning must inherit the mask.
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		<-done
		runtime.UnlockOSThread()
	}()
	defer close(done)
	time.Sleep(10 * time.Millisecond)
	aff, err := ThreadAffinities()
	if err != nil {
		t.Fatal(err)
	}
	if len(aff) < 2 {
		t.Fatalf("only %d threads seen", len(aff))
	}
	for tid, set := range aff {
		if set.Count() != 1 || !set.IsSet(LastCPU()) {
			t.Errorf("thread %d may run on %d CPUs (CPU %d set: %v)", tid, set.Count(), LastCPU(), set.IsSet(LastCPU()))
		}
	}
	if err := PinProcess(-1); err == nil {
		t.Error("CPU -1 accepted")
	}
	if err := PinProcess(1023); err == nil {
		t.Error("a CPU the machine does not have accepted")
	}
}

func TestSimRunFollowsTheVsyncRule(t *testing.T) {
	prof, err := LookupProfile("social")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSim(prof, 120, 8<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(context.Background(), time.Second); err == nil {
		t.Error("Run without units accepted")
	}
	// Work that overruns now and then: about a period per frame.
	if err := s.SetUnits(2000); err != nil {
		t.Fatal(err)
	}
	frames, err := s.Run(context.Background(), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) < 10 {
		t.Fatalf("%d frames in 300 ms", len(frames))
	}
	origin, p := frames[0].Start, int64(s.Period())
	for i, f := range frames {
		if f.End <= f.Start {
			t.Fatalf("frame %d ends before it starts: %v", i, f)
		}
		if (f.Start-origin)%p != 0 {
			t.Fatalf("frame %d starts off the grid: %d ns after the origin", i, f.Start-origin)
		}
		if i > 0 {
			if want := NextStart(origin, frames[i-1].Start, frames[i-1].End, s.Period()); f.Start != want {
				t.Fatalf("frame %d starts at %d, the vsync rule says %d", i, f.Start, want)
			}
		}
	}
}

func TestSimInputs(t *testing.T) {
	prof, _ := LookupProfile("scroll")
	for _, c := range []struct {
		hz  float64
		buf int64
	}{{0, 8 << 20}, {1000, 8 << 20}, {120, 100}, {120, 1 << 50}} {
		if _, err := NewSim(prof, c.hz, c.buf, 1); err == nil {
			t.Errorf("NewSim(%v Hz, %d bytes) accepted", c.hz, c.buf)
		}
	}
	bad := prof
	bad.Jitter = -1
	if _, err := NewSim(bad, 120, 8<<20, 1); err == nil {
		t.Error("negative jitter accepted")
	}
	s, _ := NewSim(prof, 120, 8<<20, 1)
	for _, u := range []float64{0, -1, 1e9} {
		if err := s.SetUnits(u); err == nil {
			t.Errorf("units %v accepted", u)
		}
	}
	if _, err := LookupProfile("doom"); err == nil {
		t.Error("unknown profile accepted")
	}
}

// Calibration must pick units from the measured cost and check them; the
// jank it reaches depends on the machine's load, so it is not asserted.
func TestCalibrate(t *testing.T) {
	prof, _ := LookupProfile("video")
	s, err := NewSim(prof, 120, 64<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Calibrate(context.Background(), 5, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if c.NsPerUnit <= 0 || c.Units <= 0 || c.Units != s.Units() || c.MedianFraction <= 0 {
		t.Errorf("calibration %+v", c)
	}
	if _, err := s.Calibrate(context.Background(), 0, time.Second); err == nil {
		t.Error("target jank 0 accepted")
	}
}
