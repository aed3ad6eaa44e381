package tinystories

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"shade/gguf"
	"shade/model"
)

// TestMain points the user cache directory at a temporary one, so that
// ExamplePath's Path writes there and not into the user's own cache.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tinystories-cache")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// The embedded file is the published one: the conformance pack's tests hold
// this exact file against llama.cpp.
func TestEmbeddedIsThePublishedFile(t *testing.T) {
	sum := sha256.Sum256(embedded)
	if got, want := hex.EncodeToString(sum[:]), "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"; got != want {
		t.Fatalf("sha256 %s, want %s", got, want)
	}
	if ref, err := os.ReadFile("../../shared/testdata/conformance/stories260K.gguf"); err == nil && !bytes.Equal(ref, embedded) {
		t.Error("the embedded model differs from ../shared/testdata/conformance/stories260K.gguf")
	}
}

func TestInstall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	cases := []struct {
		name   string
		before func(path string) error
	}{
		{"missing", func(string) error { return nil }},
		{"kept", func(string) error { return nil }},
		{"cut short", func(p string) error { return os.WriteFile(p, embedded[:len(embedded)/3], 0o644) }},
		{"other bytes", func(p string) error { return os.WriteFile(p, []byte("GGUF but not this one"), 0o644) }},
	}
	for _, tc := range cases {
		if err := tc.before(filepath.Join(dir, FileName)); err != nil {
			t.Fatal(err)
		}
		path, err := Install(dir)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, embedded) {
			t.Fatalf("%s: %s does not hold the model (%v)", tc.name, path, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	// The installed file opens through the same checks as any model file.
	m, err := model.Open(filepath.Join(dir, FileName), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Config.Vocab != 512 || m.Config.Layers != 5 {
		t.Errorf("config %+v, want stories260K's (vocab 512, 5 layers)", m.Config)
	}
}

func TestInstallRefusesDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, FileName), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(dir); err == nil {
		t.Fatal("Install over a directory succeeded")
	}
}

func TestGGUFIsACopy(t *testing.T) {
	b := GGUF()
	b[0] ^= 0xff
	if embedded[0] != 'G' {
		t.Fatal("GGUF returned the embedded bytes themselves")
	}
	if _, err := gguf.Parse(GGUF()); err != nil {
		t.Fatal(err)
	}
}
