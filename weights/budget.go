package weights

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// budgetUnits are the size suffixes ParseBudget accepts, matched without
// regard to case: decimal (kB = 1000) and binary (KiB = 1024) multiples.
var budgetUnits = []struct {
	suffix string
	scale  float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"b", 1},
}

// ParseBudget reads a DRAM budget: a percentage of the target model's
// weight bytes total ("40%", "0%", "100%", "12.5%"), or a size in bytes
// with an optional unit ("3000000000", "512MiB", "2GiB", "1.5GB"; KiB, MiB,
// GiB, TiB are powers of 1024, kB, MB, GB, TB powers of 1000). It returns
// the budget in bytes, rounded down.
func ParseBudget(s string, total int64) (int64, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("dram budget: empty (want a percentage such as 50%% or a size such as 2GiB)")
	}
	if total < 0 {
		return 0, fmt.Errorf("dram budget: negative model size %d", total)
	}
	if num, ok := strings.CutSuffix(in, "%"); ok {
		p, err := parseNumber(num)
		if err != nil {
			return 0, fmt.Errorf("dram budget %q: %v", s, err)
		}
		if p > 100 {
			return 0, fmt.Errorf("dram budget %q: a percentage of the model's weights must be in [0%%, 100%%]", s)
		}
		return int64(math.Floor(float64(total) * p / 100)), nil
	}
	lower := strings.ToLower(in)
	scale := 1.0
	for _, u := range budgetUnits {
		if num, ok := strings.CutSuffix(lower, u.suffix); ok {
			lower, scale = strings.TrimSpace(num), u.scale
			break
		}
	}
	v, err := parseNumber(lower)
	if err != nil {
		return 0, fmt.Errorf("dram budget %q: %v (want a percentage such as 50%% or a size such as 2GiB, 512MiB, 1.5GB or a byte count)", s, err)
	}
	b := math.Floor(v * scale)
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("dram budget %q: too large", s)
	}
	return int64(b), nil
}

// parseNumber reads a finite, non-negative decimal number.
func parseNumber(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("missing number")
	}
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' {
			return 0, fmt.Errorf("%q is not a non-negative decimal number", s)
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a non-negative decimal number", s)
	}
	return v, nil
}
