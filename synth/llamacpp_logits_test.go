package synth

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"testing"

	"shade/gguf"
	"shade/model"
	"shade/quant"
)

// Files of llama.cpp's release in the shared test tree: its perplexity tool
// and its CPU library for AVX2 machines (haswell), the build the
// conformance references come from.
const (
	llamaPerplexity = "../../shared/llama.cpp/bin/llama-perplexity"
	llamaHaswellLib = "../../shared/llama.cpp/bin/libggml-cpu-haswell.so"
	llamaLibDir     = "../../shared/llama.cpp/lib"
	typesVocab      = "../../shared/testdata/conformance/types/types-tiny-q2_k.gguf"
	gplText         = "../../shared/testdata/text/gpl-3.txt"
)

// TestOtherFilesMatchLlamaCpp holds files the conformance pack does not
// have to the pack's tolerances: for two shapes (the pack's, and one with
// Llama 3 rope frequencies, a tied LM head and another feed-forward width)
// and seeds of their own, it writes an F32 model, has llama-quantize make a
// file of every type the types pack covers, has llama-perplexity (on its
// haswell library, one thread) save its log-probabilities over chunks of
// 32 tokens of gpl-3.txt, computed in one micro-batch a chunk and then one
// token at a time (llama.cpp rounds some types differently on the two
// paths; shade's rows are the same in any batch), and requires shade's
// logits for the same tokens, the chunk in one batch, within 0.05·std of
// llama.cpp's on each row's top 40 and 0.08·std on the whole row (the
// pack's README; llama-perplexity stores log-probs in 16 bits, whose half
// step is allowed for). Skipped with -short, off amd64, or without the
// binaries.
func TestOtherFilesMatchLlamaCpp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs llama.cpp's tools")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("llama.cpp's reference library is x86's")
	}
	ppl := haswellPerplexity(t)
	quantize, err := filepath.Abs(llamaQuantize)
	if err == nil {
		_, err = os.Stat(quantize)
	}
	if err != nil {
		t.Skipf("llama-quantize not available: %v", err)
	}
	text, err := filepath.Abs(gplText)
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := gguf.Open(typesVocab)
	if err != nil {
		t.Skipf("types pack not available: %v", err)
	}
	defer vocab.Close()

	pack := Shape{Name: "pack", Arch: "llama", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64,
		FFN: 768, ContextLen: 4096, RopeBase: 10000, RMSEps: 1e-5}
	llama3 := tiny256 // Llama 3 rope frequencies, tied LM head, ffn 512
	cases := []struct {
		shape Shape
		seed  uint64
	}{{pack, 21}, {llama3, 22}}
	types := []string{"Q2_K", "Q3_K_M", "Q5_K_M", "IQ4_XS", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL"}
	dir := t.TempDir()
	for _, c := range cases {
		src := filepath.Join(dir, fmt.Sprintf("%s-%d-F32.gguf", c.shape.Name, c.seed))
		if err := WriteFile(src, Options{Shape: c.shape, Type: quant.F32, Vocab: vocab, Seed: c.seed}); err != nil {
			t.Fatal(err)
		}
		for _, typ := range types {
			name := fmt.Sprintf("%s-%d-%s", c.shape.Name, c.seed, typ)
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(dir, name+".gguf")
				if out, err := exec.Command(quantize, src, path, typ).CombinedOutput(); err != nil {
					t.Fatalf("llama-quantize: %v\n%s", err, out)
				}
				for _, ub := range []string{"32", "1"} {
					kld := filepath.Join(dir, name+"-ub"+ub+".kld")
					cmd := exec.Command(ppl, "-m", path, "-f", text, "-c", "32", "-b", "32", "-ub", ub, "--chunks", "8", "-t", "1", "--kl-divergence-base", kld)
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("llama-perplexity: %v\n%s", err, out)
					}
					ref, err := readLogProbs(kld)
					if err != nil {
						t.Fatal(err)
					}
					top, full, row := compareLogProbs(t, path, ref)
					t.Logf("llama.cpp's micro-batches of %2s: worst row %d: top-40 %.4f·std, whole row %.4f·std", ub, row, top, full)
					if top > 0.05 || full > 0.08 {
						t.Errorf("micro-batches of %s: row %d off llama.cpp by %.4f·std on the top 40, %.4f·std on the row (tolerances 0.05, 0.08)", ub, row, top, full)
					}
				}
			})
		}
	}
}

// haswellPerplexity puts llama-perplexity beside llama.cpp's haswell CPU
// library alone, so that it loads that one whatever this CPU could run
// (its loader picks the best library in the binary's directory), and
// returns the copy's path.
func haswellPerplexity(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{llamaPerplexity, llamaHaswellLib} {
		if err := copyFile(filepath.Join(bin, filepath.Base(f)), f); err != nil {
			t.Skipf("llama.cpp not available: %v", err)
		}
	}
	lib, err := filepath.Abs(llamaLibDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(lib, filepath.Join(dir, "lib")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(bin, filepath.Base(llamaPerplexity))
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// logProbs is what llama-perplexity --kl-divergence-base saves: the
// tokens, and for the second half of every chunk's rows (those it scores)
// each row's log-probabilities in 16 bits: scale, the smallest log-prob
// kept, then one uint16 a token (0: at or below that smallest).
type logProbs struct {
	ctx, vocab, chunks int
	tokens             []int32
	rows               [][]byte // per scored row: 8 bytes of scale and minimum, then the uint16s
}

func readLogProbs(path string) (*logProbs, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 20 || string(b[:8]) != "_logits_" {
		return nil, fmt.Errorf("%s: not a llama-perplexity logits file", path)
	}
	r := &logProbs{
		ctx:    int(binary.LittleEndian.Uint32(b[8:])),
		vocab:  int(binary.LittleEndian.Uint32(b[12:])),
		chunks: int(binary.LittleEndian.Uint32(b[16:])),
	}
	off := 20 + 4*r.ctx*r.chunks
	nv := 2*((r.vocab+1)/2) + 4 // uint16s a row
	scored := r.ctx - 1 - r.ctx/2
	if r.ctx < 4 || off+2*nv*scored*r.chunks != len(b) {
		return nil, fmt.Errorf("%s: %d bytes for ctx %d, vocab %d, %d chunks", path, len(b), r.ctx, r.vocab, r.chunks)
	}
	r.tokens = make([]int32, r.ctx*r.chunks)
	for i := range r.tokens {
		r.tokens[i] = int32(binary.LittleEndian.Uint32(b[20+4*i:]))
	}
	for i := 0; i < scored*r.chunks; i++ {
		r.rows = append(r.rows, b[off+2*nv*i:off+2*nv*(i+1)])
	}
	return r, nil
}

// compareLogProbs runs each chunk through shade in one batch (its first
// token BOS, as llama-perplexity does) and returns the worst row's
// deviations from ref in units of the row's logit std, and that row.
func compareLogProbs(t *testing.T, path string, ref *logProbs) (worstTop, worstFull float64, worstRow int) {
	m, err := model.Open(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Config.Vocab != ref.vocab {
		t.Fatalf("vocabulary %d, llama.cpp's %d", m.Config.Vocab, ref.vocab)
	}
	n, v, first := ref.ctx, ref.vocab, ref.ctx/2
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	logits := make([]float32, n*v)
	for c := range ref.chunks {
		chunk := append([]int32(nil), ref.tokens[c*n:(c+1)*n]...)
		chunk[0] = ref.tokens[0]
		s, err := m.NewState(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Forward(model.Chain(chunk)); err != nil {
			t.Fatal(err)
		}
		if err := s.Logits(rows, logits); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < n-1-first; k++ {
			top, full := rowDeviation(logits[(first+k)*v:(first+k+1)*v], ref.rows[c*(n-1-first)+k])
			if top > worstTop {
				worstTop, worstRow = top, c*n+first+k
			}
			worstFull = max(worstFull, full)
		}
	}
	return worstTop, worstFull, worstRow
}

// rowDeviation compares one row of logits with llama-perplexity's stored
// log-probabilities of it: the largest differences of the log-softmax
// (less the storage's half step) on the 40 most likely tokens and on all
// tokens stored above the floor, in units of the logits' std.
func rowDeviation(logits []float32, rec []byte) (top, full float64) {
	scale := float64(math.Float32frombits(binary.LittleEndian.Uint32(rec)))
	floor := float64(math.Float32frombits(binary.LittleEndian.Uint32(rec[4:])))
	mx, mean := math.Inf(-1), 0.0
	for _, x := range logits {
		mx = max(mx, float64(x))
		mean += float64(x)
	}
	mean /= float64(len(logits))
	var sum, variance float64
	for _, x := range logits {
		sum += math.Exp(float64(x) - mx)
		variance += (float64(x) - mean) * (float64(x) - mean)
	}
	std := math.Sqrt(variance / float64(len(logits)))
	lse := mx + math.Log(sum)
	type dev struct{ lp, d float64 }
	var devs []dev
	for i, x := range logits {
		q := binary.LittleEndian.Uint16(rec[8+2*i:])
		if q == 0 {
			continue
		}
		lp := floor + scale*float64(q)
		d := max(0, math.Abs(float64(x)-lse-lp)-scale/2) / std
		devs = append(devs, dev{lp, d})
		full = max(full, d)
	}
	sort.Slice(devs, func(a, b int) bool { return devs[a].lp > devs[b].lp })
	for i := 0; i < 40 && i < len(devs); i++ {
		top = max(top, devs[i].d)
	}
	return top, full
}
