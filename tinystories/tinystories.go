// Package tinystories carries a small real model inside the binary:
// stories260K, a 260-thousand-parameter Llama trained by llama2.c on the
// TinyStories data set (MIT licence, see LICENSE beside this file), with its
// 512-token SentencePiece tokenizer. It writes English children's stories
// from a prompt such as "Once upon a time", which makes it the model a first
// run uses when it is given none: it shows what the runtime does without a
// download. It is far too small to say anything true or to follow
// instructions.
//
// The model is opened like any other: Path writes it once into the user's
// cache directory and returns the file's path, so that it goes through the
// same GGUF checks, memory mapping, DRAM budget and calibration files as a
// model the user gave (all of which work on files, not bytes).
package tinystories

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
)

// Name is the model's name, as servers report it.
const Name = "stories260K"

// FileName is the name Path gives the cached file.
const FileName = "stories260K.gguf"

// embedded is the file ggml-org/models publishes as tinyllamas/stories260K.gguf
// (SHA-256 270cba1b…256d, 1185376 bytes), byte for byte.
//
//go:embed stories260K.gguf
var embedded []byte

// GGUF returns a copy of the model file's bytes (1.1 MiB).
func GGUF() []byte { return bytes.Clone(embedded) }

// Path returns the path of the model in the user's cache directory
// (os.UserCacheDir()/shade/stories260K.gguf, or under the temporary
// directory where there is none), writing it there first when it is missing
// or differs from the embedded bytes.
func Path() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return Install(filepath.Join(dir, "shade"))
}

// Install makes dir/stories260K.gguf hold the embedded model and returns its
// path. A file already there with the same bytes is kept; anything else (a
// copy cut short, an older model) is replaced by a rename, so that a process
// with the old file mapped keeps reading the old file.
func Install(dir string) (string, error) {
	path := filepath.Join(dir, FileName)
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, embedded) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("tinystories: %w", err)
	}
	tmp, err := os.CreateTemp(dir, FileName+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("tinystories: %w", err)
	}
	_, werr := tmp.Write(embedded)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("tinystories: writing %s: %w", path, werr)
	}
	return path, nil
}
