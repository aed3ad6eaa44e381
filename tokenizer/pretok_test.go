package tokenizer

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// words splits s with sp and returns the words as strings.
func words(sp preSplitter, s string) []string {
	cpts := []rune(s)
	lens := []int{len(cpts)}
	if len(cpts) == 0 {
		return nil
	}
	for _, stage := range sp {
		lens = stage(cpts, lens, nil)
	}
	var out []string
	c := 0
	for _, n := range lens {
		out = append(out, string(cpts[c:c+n]))
		c += n
	}
	return out
}

// Hand-checked splits (verified against std::regex with testdata/regex_oracle.cpp
// for the regex-based ones, and against llama.cpp's matchers by reading).
func TestPreTokenizerCases(t *testing.T) {
	cases := []struct {
		split preSplitter
		in    string
		want  []string
	}{
		{gpt2Split, "Hello world", []string{"Hello", " world"}},
		{gpt2Split, "  Hello", []string{" ", " Hello"}},
		{gpt2Split, "a   b  ", []string{"a", "  ", " b", "  "}},
		{gpt2Split, "I've 'RE 12345!", []string{"I", "'ve", " '", "RE", " 12345", "!"}},
		{gpt2Split, "\t\n x", []string{"\t\n", " x"}},
		{llama3Split, "I've 'RE 12345!", []string{"I", "'ve", " '", "RE", " ", "123", "45", "!"}},
		{llama3Split, "a \n\n b", []string{"a", " \n\n", " b"}},
		{llama3Split, "x...\n\ny", []string{"x", "...\n\n", "y"}},
		{llama3Split, "  \t  z", []string{"  \t ", " z"}},
		{llama3Split, "-Hello+world", []string{"-Hello", "+world"}},
		{qwen2Split, "I've 'RE 12345!", []string{"I", "'ve", " '", "RE", " ", "1", "2", "3", "4", "5", "!"}},
		{qwen2Split, "中文 ٣٤ x²", []string{"中文", " ", "٣", "٤", " x", "²"}},
		{defaultSplit, "Hello, world!! 1234567", []string{"Hello", ",", " world", "!!", " ", "123", "456", "7"}},
		{defaultSplit, "a$b`c", []string{"a", "$", "b", "`", "c"}},
	}
	for _, c := range cases {
		if got := words(c.split, c.in); !slices.Equal(got, c.want) {
			t.Errorf("%q:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// collapse maps s to llama.cpp's one-byte-per-code-point collapsed form.
func collapse(s string) []byte {
	var out []byte
	for _, r := range s {
		f := flagsOf(r)
		switch {
		case r < 128:
			out = append(out, byte(r))
		case f&fSpace != 0:
			out = append(out, 0x0B)
		case f&fNumber != 0:
			out = append(out, 0xD1)
		case f&fLetter != 0:
			out = append(out, 0xD2)
		case unicode.IsPunct(r):
			out = append(out, 0xD3)
		case unicode.IsMark(r):
			out = append(out, 0xD4)
		case unicode.IsSymbol(r):
			out = append(out, 0xD5)
		default:
			out = append(out, 0xD0)
		}
	}
	return out
}

// randomText draws from an alphabet rich in the characters the
// pre-tokenizers treat specially.
func randomText(rng *rand.Rand) string {
	alphabet := []string{
		"a", "b", "Z", "s", "t", "r", "e", "v", "m", "l", "d", "S", "T", "R", "E", "L", "D",
		"0", "1", "9", "'", "'", " ", " ", " ", "\t", "\n", "\r", "\v", "\f", "\x1c", "\x01",
		"!", ".", ",", "?", "$", "+", "<", "^", "`", "|", "~", "_", "-", "(", "@",
		"é", "中", "ß", "\u0301", "٣", "²", "Ⅻ", "€", "😀", "\u00a0", "\u2003", "\u3000", "\u0085",
		"\u0378", "\ue000", "«", "—", "\U0002ebf0",
	}
	n := rng.IntN(24)
	var b strings.Builder
	for range n {
		b.WriteString(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// TestPreTokenizerOracle compares the hand-written splitters with std::regex
// run as llama.cpp runs it. Build testdata/regex_oracle.cpp and set
// TOKENIZER_REGEX_ORACLE to the binary to run it.
func TestPreTokenizerOracle(t *testing.T) {
	bin := os.Getenv("TOKENIZER_REGEX_ORACLE")
	if bin == "" {
		t.Skip("TOKENIZER_REGEX_ORACLE not set (build testdata/regex_oracle.cpp with g++ to run this)")
	}
	for _, c := range []struct {
		regex string
		split splitStage
	}{
		{"qwen2", qwen2Split[0]},
		{"llama3", llama3Split[0]},
		{"gpt2", splitGPT2},
		{"punct", splitPunctRuns},
		{"num", splitNumberRuns},
		{"digits3", splitDigitTriples},
	} {
		t.Run(c.regex, func(t *testing.T) {
			cmd := exec.Command(bin, c.regex)
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer stdin.Close()
			sc := bufio.NewScanner(stdout)
			rng := rand.New(rand.NewPCG(1, uint64(len(c.regex))))
			fails := 0
			for i := 0; i < 20000 && fails < 10; i++ {
				s := randomText(rng)
				fmt.Fprintln(stdin, hex.EncodeToString(collapse(s)))
				if !sc.Scan() {
					t.Fatalf("oracle: %v", sc.Err())
				}
				want := sc.Text()
				var got []string
				if s != "" {
					for _, n := range c.split([]rune(s), []int{len([]rune(s))}, nil) {
						got = append(got, fmt.Sprint(n))
					}
				}
				if g := strings.Join(got, " "); g != want {
					t.Errorf("%q: got lengths %s, std::regex %s", s, g, want)
					fails++
				}
			}
		})
	}
}
