package weights

import (
	"os"
	"testing"
)

func mkdirTemp() (string, error) { return os.MkdirTemp("", "shade-weights-test-") }

func TestMain(m *testing.M) {
	code := m.Run()
	if dirOnce.dir != "" {
		os.RemoveAll(dirOnce.dir)
	}
	os.Exit(code)
}
