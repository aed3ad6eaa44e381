package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"shade/gguf"
	"shade/model"
	"shade/quant"
	"shade/synth"
)

func cmdSynth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var names []string
	for _, s := range synth.Shapes() {
		names = append(names, s.Name)
	}
	fs := newFlagSet("synth", "synth --shape NAME [--type TYPE] [--vocab VOCAB.gguf] [--tail-from K --tail-scale S] -o FILE\n"+
		"       shade synth --draft-of TARGET.gguf --layers K [--agreement N] -o FILE", stderr)
	shapeName := fs.String("shape", "", "model shape: "+strings.Join(names, ", "))
	var types []string
	for _, t := range synth.Types() {
		types = append(types, t.String())
	}
	typeName := fs.String("type", "Q4_0", "matrix type: "+strings.Join(types, ", "))
	vocabPath := fs.String("vocab", "", "GGUF `file` whose tokenizer.* keys to copy (e.g. ../shared/testdata/tokenizer/ggml-vocab-llama3.gguf); default: the built-in 512-token demo vocabulary")
	tailFrom := fs.Int("tail-from", 0, "with --tail-scale: scale the output projections (attn_output, ffn_down) of layers `K` and up, so that a K-layer draft (--draft-of … --layers K) agrees with the model more often")
	tailScale := fs.Float64("tail-scale", 1, "scale `S` ≥ 0 of the layers from --tail-from: 1 leaves them as they are, 0 makes them add nothing (the K-layer draft then always agrees)")
	draftOf := fs.String("draft-of", "", "write a self-speculative draft of the GGUF model `TARGET`: its first --layers blocks, its embedding, final norm, LM head, metadata and tokenizer (no --shape, --type or --vocab)")
	layers := fs.Int("layers", 0, "with --draft-of: number of the target's blocks `K` the draft keeps (1 to the target's count − 1)")
	agreement := fs.Int("agreement", 0, "with --draft-of: after writing, measure the greedy agreement of draft and target over `N` random tokens (seeded by --seed) and print it")
	out := fs.String("o", "", "output `file`")
	seed := fs.Uint64("seed", 1, "random seed")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	force := fs.Bool("force", false, "replace the -o file if it exists")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *out != "" {
		exists, err := synth.CheckOutput(*out)
		if err != nil {
			return err
		}
		if exists && !*force {
			return fmt.Errorf("%s exists: refusing to overwrite it (--force replaces it)", *out)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *draftOf != "" {
		for _, f := range []string{"shape", "type", "vocab", "tail-from", "tail-scale"} {
			if set[f] {
				return fmt.Errorf("--%s does not apply to --draft-of (a draft keeps the target's weights, types and tokenizer)", f)
			}
		}
		if len(pos) > 0 || *out == "" || !set["layers"] {
			fs.Usage()
			return errUsage
		}
		return synthDraft(ctx, *draftOf, *layers, *out, *agreement, *seed, stdout)
	}
	for _, f := range []string{"layers", "agreement"} {
		if set[f] {
			return fmt.Errorf("--%s applies only to --draft-of", f)
		}
	}
	if len(pos) > 0 || *shapeName == "" || *out == "" {
		fs.Usage()
		return errUsage
	}
	shape, err := synth.LookupShape(*shapeName)
	if err != nil {
		return err
	}
	typ, err := quant.ParseType(*typeName)
	if err != nil {
		return err
	}
	if !slices.Contains(synth.Types(), typ) {
		return fmt.Errorf("--type %v: matrices can be %s", typ, strings.Join(types, ", "))
	}
	if set["tail-scale"] && !set["tail-from"] {
		return errors.New("--tail-scale needs --tail-from K: the first layer to scale")
	}
	var vocab *gguf.File
	if *vocabPath != "" {
		if vocab, err = gguf.Open(*vocabPath); err != nil {
			return err
		}
		defer vocab.Close()
	} else if vocab, err = synth.DemoVocab(); err != nil {
		return err
	}
	t0 := time.Now()
	last := time.Time{}
	opts := synth.Options{Shape: shape, Type: typ, Vocab: vocab, Seed: *seed,
		TailFrom: *tailFrom, TailScale: float32(*tailScale),
		Progress: func(done, total int64) {
			if *quiet || (time.Since(last) < 500*time.Millisecond && done < total) {
				return
			}
			last = time.Now()
			fmt.Fprintf(stderr, "\rwriting %s: %s / %s", *out, human(uint64(done)), human(uint64(total)))
			if done >= total {
				fmt.Fprintln(stderr)
			}
		}}
	if !set["tail-from"] {
		opts.TailScale = 0 // no tail: Options' zero value
	}
	if err := synth.WriteFileContext(ctx, *out, opts); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr)
			return fmt.Errorf("stopped: %s not written", *out)
		}
		return err
	}
	tail := ""
	if opts.TailFrom > 0 {
		tail = fmt.Sprintf(", layers %d+ scaled by %g", opts.TailFrom, opts.TailScale)
	}
	fmt.Fprintf(stdout, "wrote %s: %s shape, %v%s, %.1fs\n", *out, shape.Name, typ, tail, time.Since(t0).Seconds())
	return nil
}

// maxAgreement bounds --agreement: more tokens than any model's context.
const maxAgreement = 1 << 20

// synthDraft writes the draft of target and, if n > 0, measures its greedy
// agreement with the target over n random tokens.
func synthDraft(ctx context.Context, target string, layers int, out string, n int, seed uint64, stdout io.Writer) error {
	if n < 0 || n > maxAgreement {
		// Agreement runs the models over n tokens at once: n KV slots each.
		return fmt.Errorf("--agreement %d: a number of tokens in [0, %d]", n, maxAgreement)
	}
	t0 := time.Now()
	tf, err := gguf.Open(target)
	if err != nil {
		return err
	}
	defer tf.Close()
	if err := synth.WriteDraftContext(ctx, out, tf, layers); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped: %s not written", out)
		}
		return err
	}
	arch, _ := tf.Meta.String("general.architecture")
	total, _ := tf.Meta.Int(arch + ".block_count")
	size := int64(0)
	if st, err := os.Stat(out); err == nil {
		size = st.Size()
	}
	fmt.Fprintf(stdout, "wrote %s: first %d of %d layers of %s, %s (%.1f%% of the target's %s), %.1fs\n",
		out, layers, total, target, human(uint64(size)), 100*float64(size)/float64(tf.Size), human(tf.Size), time.Since(t0).Seconds())
	if n == 0 {
		return nil
	}
	t0 = time.Now()
	tm, err := model.Open(target, 0)
	if err != nil {
		return err
	}
	defer tm.Close()
	dm, err := model.Open(out, 0)
	if err != nil {
		return err
	}
	defer dm.Close()
	r := rand.New(rand.NewPCG(seed, 0))
	toks := make([]int32, n)
	for i := range toks {
		toks[i] = int32(r.IntN(tm.Config.Vocab))
	}
	if n > tm.Config.ContextLen {
		return fmt.Errorf("--agreement %d: more tokens than the target's context of %d", n, tm.Config.ContextLen)
	}
	a, err := synth.Agreement(tm, dm, toks)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "agreement %.3f: draft and target take the same greedy token at %d of %d positions (random tokens, seed %d), %.1fs\n",
		a, int(a*float64(n)+0.5), n, seed, time.Since(t0).Seconds())
	return nil
}
