package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestEncodings holds every form the encoder produces (encForms: each
// register field at 0, 31 and values in between, every index) to the
// reference words in testdata/encodings.txt, which were checked against
// llvm-mc and follow the Arm ARM's layouts.
func TestEncodings(t *testing.T) {
	f, err := os.Open("testdata/encodings.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ref := map[string]uint32{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, word, ok := strings.Cut(line, "\t")
		w, err := strconv.ParseUint(word, 16, 32)
		if !ok || err != nil {
			t.Fatalf("bad reference line %q", line)
		}
		ref[text] = uint32(w)
	}
	forms := encForms()
	if len(forms) != len(ref) {
		t.Errorf("%d forms, %d reference encodings", len(forms), len(ref))
	}
	for _, x := range forms {
		w, ok := ref[x.text]
		if !ok {
			t.Errorf("%s: no reference encoding", x.text)
		} else if w != x.word {
			t.Errorf("%s: encoded %#08x, reference %#08x", x.text, x.word, w)
		}
	}
}

// TestFieldLayouts checks the fields of a few encodings bit by bit against
// the Arm ARM's diagrams, independently of the reference file.
func TestFieldLayouts(t *testing.T) {
	// SDOT (vector): 0 Q 0 01110 10 0 Rm 1001 0 1 Rn Rd, Q=1.
	if x := vSDOT.of(3, 17, 30); x.word != 0<<31|1<<30|0b001110<<24|0b10<<22|30<<16|0b100101<<10|17<<5|3 {
		t.Errorf("sdot: %#08x", x.word)
	}
	// SMLAL (by element), 16-bit: 0 Q 0 01111 01 L M Rm 0010 H 0 Rn Rd,
	// index H:L:M, Q=0.
	if x := elem("smlal", 5, 6, 9, 6); x.word != 0b001111<<24|0b01<<22|1<<21|0<<20|9<<16|0b0010<<12|1<<11|6<<5|5 {
		t.Errorf("smlal by element: %#08x", x.word)
	}
	// MLA (by element), 32-bit: 0 Q 1 01111 10 L M Rm 0000 H 0 Rn Rd,
	// index H:L, Vm M:Rm.
	if x := elem("mla", 16, 10, 28, 3); x.word != 1<<30|1<<29|0b01111<<24|0b10<<22|1<<21|1<<20|12<<16|1<<11|10<<5|16 {
		t.Errorf("mla by element: %#08x", x.word)
	}
	// FCVTL2 (half to single): 0 Q 0 01110 0 sz 10000 10111 10 Rn Rd, Q=1, sz=0.
	if x := vFCVTL2H.of(1, 2); x.word != 1<<30|0b01110<<24|0b10000<<17|0b10111<<12|0b10<<10|2<<5|1 {
		t.Errorf("fcvtl2: %#08x", x.word)
	}
}

var wordLine = regexp.MustCompile(`^\tWORD \$0x([0-9a-f]{8}) // (.*)$`)

// TestGeneratedWords assembles the comment of every WORD in the generated
// files with llvm-mc, when it is installed, and compares the words.
func TestGeneratedWords(t *testing.T) {
	mc, err := exec.LookPath("llvm-mc")
	if err != nil {
		t.Skip("llvm-mc not installed")
	}
	files, _ := filepath.Glob("../../*_arm64.s")
	var texts []string
	var words []uint32
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "go run ./quant/_gen/arm64k") {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if m := wordLine.FindStringSubmatch(line); m != nil {
				w, _ := strconv.ParseUint(m[1], 16, 32)
				texts, words = append(texts, m[2]), append(words, uint32(w))
			}
		}
	}
	if len(texts) == 0 {
		t.Fatal("no generated WORDs found")
	}
	cmd := exec.Command(mc, "-triple=aarch64", "-mattr=+dotprod,+i8mm", "-show-encoding")
	cmd.Stdin = strings.NewReader(strings.Join(texts, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("llvm-mc: %v\n%s", err, out)
	}
	enc := regexp.MustCompile(`encoding: \[0x(..),0x(..),0x(..),0x(..)\]`).FindAllStringSubmatch(string(out), -1)
	if len(enc) != len(texts) {
		t.Fatalf("llvm-mc encoded %d of %d instructions", len(enc), len(texts))
	}
	for i, m := range enc {
		var w uint32
		for j := 4; j >= 1; j-- {
			b, _ := strconv.ParseUint(m[j], 16, 8)
			w = w<<8 | uint32(b)
		}
		if w != words[i] {
			t.Errorf("%s: WORD %#08x, llvm-mc %#08x", texts[i], words[i], w)
		}
	}
	t.Logf("checked %d WORDs with llvm-mc", len(texts))
}
