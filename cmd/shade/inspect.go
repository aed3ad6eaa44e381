package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"shade/gguf"
	"shade/model"
)

type inspectTensor struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Shape  []uint64 `json:"shape"`
	Bytes  uint64   `json:"bytes"`
	Offset uint64   `json:"offset"`
}

type inspectReport struct {
	Path         string            `json:"path"`
	Version      uint32            `json:"gguf_version"`
	Architecture string            `json:"architecture"`
	Config       *model.Config     `json:"config,omitempty"`
	ConfigError  string            `json:"config_error,omitempty"`
	Tokenizer    map[string]any    `json:"tokenizer"`
	Metadata     map[string]any    `json:"metadata"`
	Tensors      []inspectTensor   `json:"tensors"`
	TensorCount  int               `json:"tensor_count"`
	TensorBytes  uint64            `json:"tensor_bytes"`
	Parameters   uint64            `json:"parameters"`
	FileBytes    uint64            `json:"file_bytes"`
	BytesByType  map[string]uint64 `json:"bytes_by_type"`
	// FileType names general.file_type as llama.cpp does ("Q4_K_M").
	FileType string `json:"file_type,omitempty"`
	// TensorsByType counts the tensors of each type.
	TensorsByType map[string]int `json:"tensors_by_type"`
	// NotComputed lists the tensor types shade cannot compute with: such
	// a file is refused at load, naming the first tensor of one.
	NotComputed []string `json:"not_computed,omitempty"`
}

func cmdInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inspect", "inspect MODEL.gguf [--json]", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	f, err := gguf.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	r := inspectReport{Path: pos[0], Version: f.Version, FileBytes: f.Size,
		Tokenizer: map[string]any{}, Metadata: map[string]any{}, BytesByType: map[string]uint64{}, TensorsByType: map[string]int{}}
	r.Architecture, _ = f.Meta.String("general.architecture")
	if ft, err := f.Meta.Uint32("general.file_type"); err == nil {
		r.FileType = gguf.FileTypeName(ft)
	}
	if c, err := model.ReadConfig(f); err == nil {
		r.Config = c
		if ti, ok := f.Tensor("token_embd.weight"); ok && len(ti.Dims) == 2 {
			c.Vocab = int(ti.Dims[1])
		}
		_, hasOut := f.Tensor("output.weight")
		c.TiedOutput = !hasOut
	} else {
		r.ConfigError = err.Error()
	}
	for _, kv := range f.Meta.KVs {
		v := summarize(kv.Value)
		if *asJSON {
			v = jsonSafe(v)
		}
		if name, ok := strings.CutPrefix(kv.Key, "tokenizer."); ok {
			r.Tokenizer[name] = v
		} else {
			r.Metadata[kv.Key] = v
		}
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		r.Tensors = append(r.Tensors, inspectTensor{ti.Name, ti.Type.String(), ti.Dims, ti.Size, f.TensorAbsOffset(ti)})
		r.TensorBytes += ti.Size
		r.Parameters += ti.Elements()
		r.BytesByType[ti.Type.String()] += ti.Size
		if r.TensorsByType[ti.Type.String()]++; !ti.Type.Supported() && !slices.Contains(r.NotComputed, ti.Type.String()) {
			r.NotComputed = append(r.NotComputed, ti.Type.String())
		}
	}
	r.TensorCount = len(r.Tensors)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	printInspect(stdout, &r)
	return nil
}

// summarize shortens long arrays (vocabularies) for display.
func summarize(v gguf.Value) any {
	if v.Type != gguf.TypeArray {
		return v.V
	}
	switch s := v.V.(type) {
	case []string:
		if len(s) > 8 {
			return fmt.Sprintf("[%d strings: %q …]", len(s), s[:5])
		}
	case []float32:
		if len(s) > 8 {
			return fmt.Sprintf("[%d float32: %v …]", len(s), s[:5])
		}
	case []int32:
		if len(s) > 8 {
			return fmt.Sprintf("[%d int32: %v …]", len(s), s[:5])
		}
	}
	return v.V
}

func printInspect(w io.Writer, r *inspectReport) {
	fmt.Fprintf(w, "file          %s (GGUF v%d, %s)\n", clean(r.Path), r.Version, human(r.FileBytes))
	fmt.Fprintf(w, "architecture  %s\n", clean(r.Architecture))
	if c := r.Config; c != nil {
		fmt.Fprintf(w, "dims          dim %d, %d layers, %d heads (%d kv, head dim %d), ffn %d, vocab %d\n",
			c.Dim, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Vocab)
		rope := "normal"
		if c.RopeNeoX {
			rope = "neox"
		}
		fmt.Fprintf(w, "attention     rope %s base %g dims %d scale %g, rms eps %g, context %d", rope, c.RopeBase, c.RopeDim, c.RopeScale, c.RMSEps, c.ContextLen)
		if c.QKVBias {
			fmt.Fprint(w, ", qkv bias")
		}
		if c.QKNorm {
			fmt.Fprint(w, ", q/k norm")
		}
		if c.TiedOutput {
			fmt.Fprint(w, ", tied output")
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "config        not runnable: %s\n", clean(r.ConfigError))
	}
	fmt.Fprintf(w, "tokenizer     %s, pre %s, %s tokens, bos %s, eos %s\n",
		cleanV(orDash(r.Tokenizer["ggml.model"])), cleanV(orDash(r.Tokenizer["ggml.pre"])), cleanV(vocabLen(r.Tokenizer["ggml.tokens"])),
		cleanV(orDash(r.Tokenizer["ggml.bos_token_id"])), cleanV(orDash(r.Tokenizer["ggml.eos_token_id"])))
	printTypes(w, r)
	keys := make([]string, 0, len(r.Metadata))
	for k := range r.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintln(w, "\nmetadata")
	for _, k := range keys {
		fmt.Fprintf(w, "  %-44s %s\n", clean(k), cleanV(r.Metadata[k]))
	}
	fmt.Fprintln(w, "\ntensors")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  name\ttype\tshape\tbytes")
	for _, t := range r.Tensors {
		fmt.Fprintf(tw, "  %s\t%s\t%v\t%d\n", clean(t.Name), t.Type, t.Shape, t.Bytes)
	}
	tw.Flush()
	types := make([]string, 0, len(r.BytesByType))
	for t := range r.BytesByType {
		types = append(types, t)
	}
	sort.Strings(types)
	var parts []string
	for _, t := range types {
		parts = append(parts, fmt.Sprintf("%s %s", t, human(r.BytesByType[t])))
	}
	fmt.Fprintf(w, "\ntotal         %d tensors, %.3g M parameters, %s (%s)\n", r.TensorCount, float64(r.Parameters)/1e6, human(r.TensorBytes), strings.Join(parts, ", "))
}

// printTypes writes the line saying what the file's matrices are: its file
// type's name, how many tensors of each type (most first), and the types
// shade would refuse.
func printTypes(w io.Writer, r *inspectReport) {
	types := make([]string, 0, len(r.TensorsByType))
	for t := range r.TensorsByType {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool {
		a, b := types[i], types[j]
		if r.TensorsByType[a] != r.TensorsByType[b] {
			return r.TensorsByType[a] > r.TensorsByType[b]
		}
		return a < b
	})
	var counts []string
	for i, t := range types {
		unit := ""
		if i == 0 {
			unit = " tensors"
			if r.TensorsByType[t] == 1 {
				unit = " tensor"
			}
		}
		counts = append(counts, fmt.Sprintf("%s %d%s", t, r.TensorsByType[t], unit))
	}
	line := strings.Join(counts, ", ")
	if r.FileType != "" {
		line = clean(r.FileType) + ": " + line
	}
	if len(r.NotComputed) > 0 {
		line += "; shade does not compute " + strings.Join(r.NotComputed, ", ") + " (the file is refused at load)"
	}
	fmt.Fprintf(w, "types         %s\n", line)
}

// clean makes text from a file safe to print on a terminal: control
// characters (a newline that would forge a line, an escape sequence that
// would drive the terminal, tabs that would break the columns), Unicode
// bidirectional overrides and invalid UTF-8 are written as Go escapes.
func clean(s string) string {
	ok := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError:
			q := strconv.QuoteRune(r) // '\n', '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// cleanV is clean of a value's default format.
func cleanV(v any) string { return clean(fmt.Sprint(v)) }

// jsonSafe replaces the floats JSON cannot hold (NaN, ±Inf) in a metadata
// value by the strings "NaN", "+Inf" and "-Inf" (inspect --json).
func jsonSafe(v any) any {
	bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
	name := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) } // NaN, +Inf, -Inf
	switch x := v.(type) {
	case float32:
		if bad(float64(x)) {
			return name(float64(x))
		}
	case float64:
		if bad(x) {
			return name(x)
		}
	case []float32:
		out := make([]any, len(x))
		for i, f := range x {
			out[i] = jsonSafe(f)
		}
		return out
	case []float64:
		out := make([]any, len(x))
		for i, f := range x {
			out[i] = jsonSafe(f)
		}
		return out
	case []gguf.Value: // an array of arrays
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonSafe(e.V)
		}
		return out
	}
	return v
}

func vocabLen(v any) any {
	if s, ok := v.(string); ok {
		var n int
		if _, err := fmt.Sscanf(s, "[%d", &n); err == nil {
			return n
		}
	}
	if s, ok := v.([]string); ok {
		return len(s)
	}
	return "-"
}

func orDash(v any) any {
	if v == nil {
		return "-"
	}
	return v
}

func human(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
