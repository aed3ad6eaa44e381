// Package calib owns the per-device measurements shade keeps beside a model
// file: the cost model, the verification-pruning predictor, a draft's
// acceptance profile, the contention baselines and controller gains. Each
// kind lives in its own JSON file next to the model
// (MODEL.gguf.shade-KIND.json), and every entry is keyed by the
// model file (its size and a hash of its first bytes), the CPU (model name
// and usable cores) and the kernels shade computes with there (the set and
// the build's revision of them), so a copied model, another machine or
// faster kernels never silently use a stale measurement. The kinds are
// declared in one table (Kinds), which says of each whether its keys name
// the kernels.
package calib

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"shade/quant"
)

// Key identifies the model file and the machine a measurement was made on.
type Key struct {
	Model   string `json:"model"`   // size and SHA-256 of the first MiB
	CPU     string `json:"cpu"`     // model name and usable cores
	Kernels string `json:"kernels"` // quant.Kernels(): timings move with them
	// KernelRev is quant.KernelRevision(): a build with other kernels
	// (or other choices of tiles, streams and prefetch) measures again.
	KernelRev string `json:"kernel_rev,omitempty"`
}

// The kinds of measurement kept beside a model.
const (
	// Cost is Lever mode's cost model (cost.Model): draft pass, target
	// layer and LM head times per batch size, and the file's read rate.
	Cost = "cost"
	// Pruner is Lever's verification-pruning predictor (spec.Pruner).
	Pruner = "pruner"
	// Acceptance is a draft's acceptance profile against the target
	// (spec.RankProfile).
	Acceptance = "acceptance"
	// Contention is elastic speculation's sensor baselines and PI gains
	// (elastic.Calibration).
	Contention = "contention"
)

// KindInfo describes one kind of measurement.
type KindInfo struct {
	Name string
	// KernelFree says the measurements do not move with the kernels (a
	// predictor trained on the model's outputs, unlike timings): their
	// keys leave Kernels empty, so they stay valid when shade computes
	// with other kernels.
	KernelFree bool
	// By is the command that measures and stores it.
	By string
}

// kinds is every kind there is, in one place: how a kind's keys are made
// must not depend on which packages a program links.
var kinds = []KindInfo{
	{Name: Cost, By: "shade calibrate"},
	{Name: Pruner, KernelFree: true, By: "shade calibrate --pruner"},
	{Name: Acceptance, KernelFree: true, By: "shade calibrate --pruner"},
	{Name: Contention, By: "shade calibrate --contention"},
}

// Kinds lists the kinds of measurement.
func Kinds() []KindInfo { return append([]KindInfo(nil), kinds...) }

// Kind returns the description of a kind, or an error naming the kinds
// there are.
func Kind(name string) (KindInfo, error) {
	var names []string
	for _, k := range kinds {
		if k.Name == name {
			return k, nil
		}
		names = append(names, k.Name)
	}
	return KindInfo{}, fmt.Errorf("calib: unknown kind %q (known: %s)", name, strings.Join(names, ", "))
}

// keyOf is the key of kind's measurements of a model on this machine.
func keyOf(modelPath, kind string) (Key, error) {
	info, err := Kind(kind)
	if err != nil {
		return Key{}, err
	}
	k, err := KeyFor(modelPath)
	if info.KernelFree {
		k.Kernels, k.KernelRev = "", ""
	}
	return k, err
}

// String is the key as one line.
func (k Key) String() string {
	if k.Kernels == "" {
		return k.Model + " @ " + k.CPU
	}
	return k.Model + " @ " + k.CPU + " (" + k.Kernels + " kernels " + k.KernelRev + ")"
}

// KeyFor returns the key of a model file on this machine.
func KeyFor(modelPath string) (Key, error) {
	f, err := os.Open(modelPath)
	if err != nil {
		return Key{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Key{}, err
	}
	h := sha256.New()
	if _, err := io.CopyN(h, f, 1<<20); err != nil && !errors.Is(err, io.EOF) {
		return Key{}, fmt.Errorf("calib: reading %s: %w", modelPath, err)
	}
	model := fmt.Sprintf("%d:%s", fi.Size(), hex.EncodeToString(h.Sum(nil))[:16])
	return Key{Model: model, CPU: CPUName(), Kernels: quant.Kernels(), KernelRev: quant.KernelRevision()}, nil
}

// CPUName is the processor's model name (from /proc/cpuinfo where there is
// one) and the cores Go may use.
func CPUName() string {
	name := runtime.GOARCH
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if ok && (strings.TrimSpace(k) == "model name" || strings.TrimSpace(k) == "Hardware") {
				name = strings.TrimSpace(v)
				break
			}
		}
	}
	// NumCPU (the cores usable when the process started), not GOMAXPROCS:
	// Go moves GOMAXPROCS with the affinity mask, so a process that pins
	// itself to one core for a measurement would key it as another CPU.
	return fmt.Sprintf("%s ×%d", name, runtime.NumCPU())
}

// Path is the file where measurements of a kind are kept for a model.
func Path(modelPath, kind string) string {
	return modelPath + ".shade-" + kind + ".json"
}

// file is the on-disk form: entries by key.
type file struct {
	Kind    string  `json:"kind"`
	Entries []entry `json:"entries"`
}

type entry struct {
	Key     Key             `json:"key"`
	Created time.Time       `json:"created"`
	Value   json.RawMessage `json:"value"`
}

// maxFile bounds what Load reads: calibration files are small.
const maxFile = 16 << 20

// Load reads the measurement of a kind for a model on this machine into v.
// It returns false (and no error) when there is none for this key yet.
func Load(modelPath, kind string, v any) (bool, error) {
	key, err := keyOf(modelPath, kind)
	if err != nil {
		return false, err
	}
	f, err := readFile(Path(modelPath, kind))
	if err != nil || f == nil {
		return false, err
	}
	for _, e := range f.Entries {
		if e.Key == key {
			if err := json.Unmarshal(e.Value, v); err != nil {
				return false, fmt.Errorf("calib: %s: entry for %s: %w", Path(modelPath, kind), key, err)
			}
			return true, nil
		}
	}
	return false, nil
}

// Stale reports whether the file of a kind for a model holds a measurement
// made on this machine with the kernel set in use but by another build's
// kernels (and none by this build's): callers say so, rather than that
// there is none, when Load finds nothing.
func Stale(modelPath, kind string) (bool, error) {
	key, err := keyOf(modelPath, kind)
	if err != nil || key.Kernels == "" {
		return false, err
	}
	f, err := readFile(Path(modelPath, kind))
	if err != nil || f == nil {
		return false, err
	}
	stale := false
	for _, e := range f.Entries {
		if e.Key == key {
			return false, nil
		}
		if e.Key.Model == key.Model && e.Key.CPU == key.CPU && e.Key.Kernels == key.Kernels {
			stale = true
		}
	}
	return stale, nil
}

func readFile(path string) (*file, error) {
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("calib: %s is over %d bytes: not a calibration file", path, maxFile)
	}
	return Parse(data, path)
}

// Parse decodes a calibration file; name is used in errors.
func Parse(data []byte, name string) (*file, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("calib: %s: %w", name, err)
	}
	return &f, nil
}

// Save stores v as the measurement of a kind for a model on this machine,
// replacing an earlier one with the same key and keeping the others. The
// file is replaced atomically.
func Save(modelPath, kind string, v any) (string, error) {
	key, err := keyOf(modelPath, kind)
	if err != nil {
		return "", err
	}
	path := Path(modelPath, kind)
	f, err := readFile(path)
	if err != nil {
		return "", err
	}
	if f == nil {
		f = &file{}
	}
	f.Kind = kind
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	kept := f.Entries[:0]
	for _, e := range f.Entries {
		if e.Key != key {
			kept = append(kept, e)
		}
	}
	f.Entries = append(kept, entry{Key: key, Created: time.Now().UTC(), Value: raw})
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(append(out, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}
