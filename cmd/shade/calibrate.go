package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// calibrateArgs are the flags every calibration shares.
type calibrateArgs struct {
	model   string
	draft   string
	threads int
	prompts string // a file of prompts, one per line ("" : built-in ones)
}

// calibrator is one kind of per-device measurement `shade calibrate` makes
// and stores beside the model (see package calib). Each lives in its own
// calibrate_*.go file and adds itself in an init function.
type calibrator struct {
	name    string // selected by --NAME; "cost" is what runs without one
	summary string
	// flags, if set, adds the calibrator's own flags to the flag set.
	flags func(fs flagSet) func() error
	run   func(ctx context.Context, a *calibrateArgs, stdout, stderr io.Writer) error
}

// flagSet is the part of flag.FlagSet calibrators use.
type flagSet interface {
	String(name, value, usage string) *string
	Int(name string, value int, usage string) *int
	Float64(name string, value float64, usage string) *float64
	Bool(name string, value bool, usage string) *bool
}

var calibrators []calibrator

func cmdCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var kinds []string
	for _, c := range calibrators {
		if c.name != "cost" { // the default, without a flag
			kinds = append(kinds, c.name)
		}
	}
	fs := newFlagSet("calibrate", "calibrate -m MODEL.gguf [--draft DRAFT.gguf] [--"+strings.Join(kinds, " | --")+"] [flags]\n       (without a --KIND flag: the cost model of speculative steps)", stderr)
	a := &calibrateArgs{}
	fs.StringVar(&a.model, "m", "", "target model `file`")
	fs.StringVar(&a.draft, "draft", "", "draft model `file`")
	fs.IntVar(&a.threads, "threads", 0, "worker threads (0: every CPU)")
	fs.StringVar(&a.prompts, "prompts", "", "`file` of prompts, one per line (default: built-in ones)")
	selected := make([]*bool, len(calibrators))
	checks := make([]func() error, len(calibrators))
	for i, c := range calibrators {
		if c.name != "cost" {
			selected[i] = fs.Bool(c.name, false, c.summary)
		}
		if c.flags != nil {
			checks[i] = c.flags(fs)
		}
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := needModelOnly(fs, pos, a.model); err != nil {
		return err
	}
	var run []calibrator
	for i, c := range calibrators {
		if selected[i] != nil && *selected[i] {
			run = append(run, c)
		}
	}
	if len(run) == 0 {
		for _, c := range calibrators {
			if c.name == "cost" {
				run = append(run, c)
			}
		}
	}
	if len(run) == 0 {
		return fmt.Errorf("no calibration selected (choose from --%s)", strings.Join(kinds, ", --"))
	}
	for _, check := range checks {
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
	}
	for _, c := range run {
		if err := c.run(ctx, a, stdout, stderr); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}
