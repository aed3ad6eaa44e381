// Command shade runs Llama-family GGUF models on the CPU. Subcommands: run,
// inspect, synth, perplexity, bench (and bench spec, bench flash, bench qos),
// serve, chat, pull, calibrate, fg.
// `shade help` lists them; `shade CMD -h` gives each one's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"shade/quant"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands []command

func init() {
	commands = []command{
		{"run", "generate text from a prompt (streams to stdout, stats on stderr)", cmdRun},
		{"inspect", "show a GGUF file's architecture, hyperparameters, tokenizer and tensors", cmdInspect},
		{"synth", "write a GGUF of a real model shape with random weights", cmdSynth},
		{"perplexity", "perplexity of a model on a text file (llama.cpp's method)", cmdPerplexity},
		{"bench", "memory bandwidth, decode and batched-forward speed, against the roofline (also bench spec, bench flash, bench qos)", cmdBench},
		{"serve", "OpenAI-compatible HTTP server (chat, completions, metrics) on 127.0.0.1", cmdServe},
		{"chat", "interactive chat in the terminal with the model's chat template", cmdChat},
		{"fg", "a foreground app's frame loop pinned to one core: jank % and frame-time percentiles", cmdFg},
		{"pull", "download a model (USER/REPO/FILE.gguf or URL) into the cache, resumable", cmdPull},
		{"calibrate", "measure this device's costs for a model and store them beside it", cmdCalibrate},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "shade: an on-device LLM runtime for Llama-family GGUF models\n\nUsage: shade COMMAND [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'shade COMMAND -h' for a command's flags.\n")
}

// startCPUProfile writes a CPU profile of the whole command to path
// (SHADE_CPUPROFILE), for `go tool pprof`.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("SHADE_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("SHADE_CPUPROFILE: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func main() {
	// SIGTERM stops a command as Ctrl-C does (serve drains, synth removes
	// its temporary file); once one has arrived, the next one kills at once,
	// so a command that does not stop can still be ended.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	os.Exit(runMain(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	if err := quant.KernelsEnvError(); err != nil { // SHADE_KERNELS names no set this CPU runs
		fmt.Fprintf(stderr, "shade: %v\n", err)
		return 2
	}
	if path := os.Getenv("SHADE_CPUPROFILE"); path != "" {
		stopProfile, err := startCPUProfile(path)
		if err != nil {
			fmt.Fprintf(stderr, "shade: %v\n", err)
			return 1
		}
		defer stopProfile()
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				return 2
			default:
				fmt.Fprintf(stderr, "shade %s: %v\n", c.name, err)
				return 1
			}
		}
	}
	fmt.Fprintf(stderr, "shade: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// errUsage marks errors already reported by flag parsing.
var errUsage = errors.New("usage")

// parseFlags parses flags that may come before or after positional
// arguments, returning the positionals.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("shade "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: shade %s\n\nFlags:\n", synopsis)
		fs.VisitAll(func(f *flag.Flag) {
			dash := "-"
			if len(f.Name) > 1 {
				dash = "--"
			}
			name, usage := flag.UnquoteUsage(f)
			line := "  " + dash + f.Name
			if name != "" {
				line += " " + name
			}
			fmt.Fprintf(stderr, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
				fmt.Fprintf(stderr, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(stderr)
		})
	}
	return fs
}

// needModelOnly checks that -m was given and that no positional arguments
// were, printing the usage when not.
func needModelOnly(fs *flag.FlagSet, pos []string, modelPath string) error {
	if len(pos) == 0 && modelPath != "" {
		return nil
	}
	fs.Usage()
	if modelPath == "" {
		return fmt.Errorf("-m MODEL.gguf is required")
	}
	return fmt.Errorf("unexpected arguments %q", pos)
}

// openInput opens a text input given by path (a prompt or text file): a
// directory is a clear error rather than a read error later. Pipes and
// FIFOs are inputs too (-f <(cmd)), so they are not refused.
func openInput(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s is a directory, not a text file", path)
	}
	return f, nil
}
