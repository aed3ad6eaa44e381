package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"shade/kv"
	"shade/model"
)

// ErrContextTooLarge is wrapped when a requested context does not fit the
// model's trained length or the memory its KV cache needs.
var ErrContextTooLarge = errors.New("context too large")

// kvReserve is what of the available memory a KV cache may take: the rest
// is left for activations, the Go heap and the rest of the machine.
const kvReserve = 0.8

// CheckContext checks a requested context size (≤ 0: the default, see
// ContextSize) against the model's trained context length and against the
// memory the KV caches of the target (and the draft, if loaded) need for
// it, where the available memory is known, and says what fits. NewSession
// checks the same before it allocates anything.
func (e *Engine) CheckContext(req int) error {
	if req < 0 {
		return fmt.Errorf("engine: context size %d is negative (0: the model's)", req)
	}
	return e.checkContext(e.ContextSize(req), 0)
}

// checkContext checks a context of n tokens with spare scratch slots.
func (e *Engine) checkContext(n, spare int) error {
	if trained := e.Model.Config.ContextLen; n > trained {
		return fmt.Errorf("engine: %w: %d tokens, but the model was trained for %d (use a context of at most %d)", ErrContextTooLarge, n, trained, trained)
	}
	need := kvBytes(e.Model, n+spare)
	if e.Draft != nil {
		need = addBytes(need, kvBytes(e.Draft, n+spare))
	}
	if need < 0 {
		return fmt.Errorf("engine: %w: a KV cache of %d tokens is too large to address", ErrContextTooLarge, n)
	}
	avail := AvailableMemory()
	if avail < 0 || float64(need) <= kvReserve*float64(avail) {
		return nil
	}
	per := kvBytes(e.Model, 1)
	if e.Draft != nil {
		per += kvBytes(e.Draft, 1)
	}
	fits := int64(kvReserve*float64(avail))/max(per, 1) - int64(spare)
	return fmt.Errorf("engine: %w: a context of %d tokens needs %.1f MiB of KV cache, but %.1f MiB of memory is available (a context of at most %d tokens fits)",
		ErrContextTooLarge, n, float64(need)/(1<<20), float64(avail)/(1<<20), max(fits, 0))
}

// kvBytes is the memory of m's KV cache of slots slots (-1: overflow).
func kvBytes(m *model.Model, slots int) int64 {
	return kv.Bytes(m.Config.Layers, m.Config.KVDim(), slots)
}

func addBytes(a, b int64) int64 {
	if a < 0 || b < 0 || a > (1<<62) || b > (1<<62) {
		return -1
	}
	return a + b
}

// AvailableMemory is the memory this process can still take, in bytes:
// the kernel's MemAvailable, or less if a cgroup (v2) limit leaves less;
// -1 where neither is known.
func AvailableMemory() int64 {
	avail := int64(-1)
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemAvailable:")); ok {
				if f := bytes.Fields(rest); len(f) >= 1 {
					if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
						avail = kb * 1024
					}
				}
			}
		}
	}
	limit, err1 := readInt("/sys/fs/cgroup/memory.max")
	used, err2 := readInt("/sys/fs/cgroup/memory.current")
	if err1 == nil && err2 == nil && limit > used {
		if left := limit - used; avail < 0 || left < avail {
			avail = left
		}
	}
	return avail
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64) // "max" is an error: no limit
}
