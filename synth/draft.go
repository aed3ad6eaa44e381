package synth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"shade/gguf"
	"shade/model"
)

// Self-speculative drafts. A draft made by DraftOf is the target's first K
// blocks followed by the target's own final norm and LM head: the residual
// stream after block K−1 is read out as if it were the last. It shares the
// target's embedding, head and tokenizer (so vocabularies are identical by
// construction) and costs about K/N of the target's per-layer weights.
//
// synth imports model to check a target with the loader that will run it
// (every tensor of every block present with the right shape), so a draft
// that DraftOf writes is one model.Open accepts, and to measure agreement
// (Agreement). model does not import synth; tests inside package model that
// want synthetic files must be external tests (package model_test).

// DraftOf writes to w a draft model made of target's first layers blocks:
// blk.0 … blk.(layers−1), the token embedding, the final norm, the LM head
// (output.weight if the target has one; tied to the embedding otherwise),
// rope_freqs.weight if present, and every other tensor not inside a block.
// Metadata is copied verbatim, tokenizer included, except
// {arch}.block_count (= layers) and general.name (marked as a draft).
// Tensor data is written straight from target's mapping, one tensor at a
// time, so the heap holds no more than the writer's 1 MB buffer whatever the
// model size. The pages read are clean page cache: they count in the
// resident size while target is mapped (1.1 GB for a 4-layer draft of a
// Q4_0 Llama-3.1-8B shape, written in 2.5 s) and the kernel reclaims them
// under pressure.
//
// layers must be in [1, N−1] for a target of N blocks.
func DraftOf(w io.Writer, target *gguf.File, layers int) (err error) {
	defer gguf.CatchFault(&err) // it copies tensors from the target's mapping
	defer gguf.GuardFaults()()
	keep, n, err := draftPlan(target, layers)
	if err != nil {
		return err
	}
	gw := gguf.NewWriter(w)
	if err := gw.CopyMeta(&target.Meta, ""); err != nil {
		return fmt.Errorf("synth: draft: %w", err)
	}
	arch, _ := target.Meta.String("general.architecture")
	if err := gw.Set(arch+".block_count", uint32(layers)); err != nil {
		return err
	}
	name, _ := target.Meta.String("general.name")
	if name == "" {
		name = arch
	}
	if err := gw.Set("general.name", fmt.Sprintf("%s (self-speculative draft: first %d of %d layers)", name, layers, n)); err != nil {
		return err
	}
	for _, ti := range keep {
		if err := gw.AddTensor(ti.Name, ti.Type, ti.Dims...); err != nil {
			return fmt.Errorf("synth: draft: %w", err)
		}
	}
	if err := gw.WriteHeader(); err != nil {
		return err
	}
	for _, ti := range keep {
		if _, err := gw.Write(target.TensorData(ti)); err != nil {
			return fmt.Errorf("synth: draft: tensor %q: %w", ti.Name, err)
		}
	}
	return gw.Close()
}

// draftPlan checks target and layers and returns the tensors a draft keeps,
// in the target's order, and the target's block count.
func draftPlan(target *gguf.File, layers int) ([]*gguf.TensorInfo, int, error) {
	if target == nil {
		return nil, 0, errors.New("synth: draft: no target file")
	}
	where := "target"
	if target.Path != "" {
		where = target.Path
	}
	cfg, err := model.ReadConfig(target)
	if err != nil {
		return nil, 0, fmt.Errorf("synth: draft of %s: %w", where, err)
	}
	n := cfg.Layers
	if layers <= 0 || layers >= n {
		return nil, 0, fmt.Errorf("synth: draft of %s: %d layers: a draft needs 1 to %d of the target's %d layers", where, layers, n-1, n)
	}
	// The model's own loader checks every tensor the architecture needs,
	// by name and shape, in place (nothing is read but the norms).
	if _, err := model.LoadWeights(target, cfg); err != nil {
		return nil, 0, fmt.Errorf("synth: draft of %s: %w", where, err)
	}
	var keep []*gguf.TensorInfo
	for i := range target.Tensors {
		ti := &target.Tensors[i]
		if b, ok := blockOf(ti.Name); ok && b >= layers {
			continue
		}
		keep = append(keep, ti)
	}
	return keep, n, nil
}

// blockOf returns N for a tensor named "blk.N.…".
func blockOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	b, err := strconv.Atoi(num)
	return b, err == nil
}

// WriteDraft writes DraftOf(target, layers) to path by way of a temporary
// file beside it, renamed into place once complete; on error no file is
// left behind. See WriteFileContext for what path may be.
func WriteDraft(path string, target *gguf.File, layers int) error {
	return WriteDraftContext(context.Background(), path, target, layers)
}

// WriteDraftContext is WriteDraft, stopped (the temporary file removed)
// when ctx is done.
func WriteDraftContext(ctx context.Context, path string, target *gguf.File, layers int) error {
	if _, _, err := draftPlan(target, layers); err != nil {
		return err // before creating anything
	}
	return writeAtomic(ctx, path, func(w io.Writer) error { return DraftOf(w, target, layers) })
}

// ErrNotRegular is wrapped when an output path names something other than
// a regular file (a directory, device, FIFO, socket or symbolic link),
// which writing a model would replace.
var ErrNotRegular = errors.New("not a regular file")

// CheckOutput reports whether path may receive a model: it must not exist
// or be a regular file (not a symbolic link). exists says it is there.
func CheckOutput(path string) (exists bool, err error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("synth: %w", err)
	case st.Mode()&os.ModeSymlink != 0:
		return true, fmt.Errorf("synth: %s is a symbolic link: %w, refusing to replace it (name the file it points to)", path, ErrNotRegular)
	case st.IsDir():
		return true, fmt.Errorf("synth: %s is a directory: %w", path, ErrNotRegular)
	case !st.Mode().IsRegular():
		return true, fmt.Errorf("synth: %s is a device, FIFO or socket: %w, refusing to replace it", path, ErrNotRegular)
	}
	return true, nil
}

// writeAtomic writes a file through write to a new temporary file in
// path's directory and renames it to path; on error, or when ctx is done,
// the temporary file is removed and path is left as it was. path must pass
// CheckOutput. The file is not fsynced.
func writeAtomic(ctx context.Context, path string, write func(io.Writer) error) (err error) {
	if _, err := CheckOutput(path); err != nil {
		return err
	}
	// A fresh name (O_EXCL), not path+".tmp": a file or link left there is
	// never written through, and two writers never share one.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = write(ctxWriter{ctx, f}); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err = ctx.Err(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// ctxWriter fails its writes once ctx is done, which stops a model being
// written (every writer here writes in chunks of at most a few MiB).
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// Agreement runs tokens through target and draft, teacher-forced (every
// model sees the same tokens), and returns the fraction of positions at
// which the two models' greedy choices (argmax of the logits, lowest index
// on ties) are the same. It is the acceptance rate a greedy chain speculator
// would see if the text were the target's own, and what synth's TailScale
// tunes. The models must share the vocabulary size; each runs in a fresh
// state of len(tokens) slots, in chunks of at most 64 tokens.
func Agreement(target, draft *model.Model, tokens []int32) (float64, error) {
	if len(tokens) == 0 {
		return 0, errors.New("synth: agreement: no tokens")
	}
	v := target.Config.Vocab
	if dv := draft.Config.Vocab; dv != v {
		return 0, fmt.Errorf("synth: agreement: target vocabulary %d tokens, draft %d", v, dv)
	}
	const chunk = 64
	ts, err := target.NewState(len(tokens))
	if err != nil {
		return 0, fmt.Errorf("synth: agreement: %w", err)
	}
	ds, err := draft.NewState(len(tokens))
	if err != nil {
		return 0, fmt.Errorf("synth: agreement: %w", err)
	}
	rows := make([]int, chunk)
	for i := range rows {
		rows[i] = i
	}
	tl := make([]float32, chunk*v)
	dl := make([]float32, chunk*v)
	same := 0
	for at := 0; at < len(tokens); at += chunk {
		b := model.Chain(tokens[at:min(len(tokens), at+chunk)])
		n := len(b.Tokens)
		for _, x := range []struct {
			s   *model.State
			out []float32
		}{{ts, tl}, {ds, dl}} {
			if err := x.s.Forward(b); err != nil {
				return 0, fmt.Errorf("synth: agreement: %w", err)
			}
			if err := x.s.Logits(rows[:n], x.out); err != nil {
				return 0, fmt.Errorf("synth: agreement: %w", err)
			}
			if err := x.s.CommitAll(); err != nil {
				return 0, fmt.Errorf("synth: agreement: %w", err)
			}
		}
		for r := range n {
			if argmax(tl[r*v:(r+1)*v]) == argmax(dl[r*v:(r+1)*v]) {
				same++
			}
		}
	}
	return float64(same) / float64(len(tokens)), nil
}

// argmax is the index of the largest value, the lowest on ties.
func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
