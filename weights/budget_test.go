package weights

import (
	"strings"
	"testing"
)

func TestParseBudget(t *testing.T) {
	const total = 4_000_000_000
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"40%", 1_600_000_000, ""},
		{"100%", total, ""},
		{"0%", 0, ""},
		{"12.5%", 500_000_000, ""},
		{" 50 % ", 2_000_000_000, ""},
		{"2GiB", 2 << 30, ""},
		{"512MiB", 512 << 20, ""},
		{"512mib", 512 << 20, ""},
		{"1.5GB", 1_500_000_000, ""},
		{"3000000000", 3_000_000_000, ""},
		{"10kB", 10_000, ""},
		{"7B", 7, ""},
		{"0", 0, ""},
		{"1 GiB", 1 << 30, ""},
		{"", 0, "empty"},
		{"%", 0, "missing number"},
		{"101%", 0, "[0%, 100%]"},
		{"-5%", 0, "not a non-negative"},
		{"-1GiB", 0, "not a non-negative"},
		{"2XB", 0, "not a non-negative"},
		{"GiB", 0, "missing number"},
		{"1e9", 0, "not a non-negative"},
		{"NaN", 0, "not a non-negative"},
		{"99999999999999999999TiB", 0, "too large"},
		{"1.2.3GB", 0, "not a non-negative"},
	}
	for _, tt := range tests {
		got, err := ParseBudget(tt.in, total)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseBudget(%q) = %d, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseBudget(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	if _, err := ParseBudget("50%", -1); err == nil {
		t.Error("negative total accepted")
	}
}

func FuzzParseBudget(f *testing.F) {
	for _, s := range []string{"40%", "2GiB", "1.5GB", "3000000000", "0%", "100%", "%", "1e308GB", "..5MiB"} {
		f.Add(s, int64(8_000_000_000))
	}
	f.Fuzz(func(t *testing.T, s string, total int64) {
		if total < 0 {
			total = -(total + 1)
		}
		b, err := ParseBudget(s, total)
		if err != nil {
			return
		}
		if b < 0 {
			t.Fatalf("ParseBudget(%q, %d) = %d: negative", s, total, b)
		}
		if strings.HasSuffix(strings.TrimSpace(s), "%") && b > total {
			t.Fatalf("ParseBudget(%q, %d) = %d: a percentage above the total", s, total, b)
		}
	})
}
