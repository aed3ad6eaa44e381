package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	shadelib "shade"
)

func cmdPull(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("pull", "pull [--sha256 HEX] [--dir DIR] [--hub URL] USER/REPO/FILE.gguf | URL", stderr)
	sum := fs.String("sha256", "", "expected SHA-256 of the file (default: the checksum the server reports, if any)")
	dir := fs.String("dir", "", "download into `DIR` (default: the model cache, <user cache dir>/shade/models)")
	hub := fs.String("hub", "", "base URL for USER/REPO/FILE references (default: $SHADE_HF_ENDPOINT, $HF_ENDPOINT or "+shadelib.DefaultHub+")")
	quiet := fs.Bool("q", false, "no progress bar")
	idle := fs.Duration("idle-timeout", 60*time.Second, "give up on an attempt that receives nothing for this long")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("want one model reference, got %d", len(pos))
	}
	if *idle <= 0 {
		return fmt.Errorf("--idle-timeout must be positive, got %v", *idle)
	}
	opt := shadelib.PullOptions{Dir: *dir, Hub: *hub, SHA256: *sum, IdleTimeout: *idle}
	bar := &progressBar{w: stderr, start: time.Now()}
	if !*quiet {
		opt.Progress = bar.update
	}
	res, err := shadelib.Pull(ctx, pos[0], opt)
	bar.end()
	if err != nil {
		return err
	}
	switch {
	case !res.Downloaded:
		fmt.Fprintf(stderr, "already downloaded")
	case res.Resumed:
		fmt.Fprintf(stderr, "downloaded (resumed) %.1f MiB", float64(res.Bytes)/(1<<20))
	default:
		fmt.Fprintf(stderr, "downloaded %.1f MiB", float64(res.Bytes)/(1<<20))
	}
	switch {
	case res.Verified:
		fmt.Fprintf(stderr, ", SHA-256 verified (%s)\n", res.SHA256)
	case res.SHA256 != "":
		fmt.Fprintf(stderr, ", SHA-256 %s (no checksum to compare with: pass --sha256)\n", res.SHA256)
	default:
		fmt.Fprintln(stderr)
	}
	fmt.Fprintln(stdout, res.Path)
	return nil
}

// progressBar draws "[#####     ]  45%  12.3/27.1 MiB  5.2 MiB/s" on one line.
type progressBar struct {
	w     io.Writer
	start time.Time
	drawn bool
}

func (p *progressBar) update(done, total int64) {
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	speed := mib(done) / max(time.Since(p.start).Seconds(), 1e-3)
	if total > 0 {
		const width = 30
		k := int(width * done / total)
		fmt.Fprintf(p.w, "\r[%s%s] %3d%% %7.1f/%.1f MiB %6.1f MiB/s", strings.Repeat("#", k), strings.Repeat(" ", width-k),
			100*done/total, mib(done), mib(total), speed)
	} else {
		fmt.Fprintf(p.w, "\r%7.1f MiB %6.1f MiB/s", mib(done), speed)
	}
	p.drawn = true
}

func (p *progressBar) end() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
