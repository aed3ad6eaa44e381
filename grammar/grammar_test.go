package grammar

import (
	"strings"
	"testing"
)

// byteVocab is every single byte plus a few multi-byte tokens and an EOS.
func testVocab(extra ...string) *Vocab {
	var toks [][]byte
	for b := 0; b < 256; b++ {
		toks = append(toks, []byte{byte(b)})
	}
	for _, e := range extra {
		toks = append(toks, []byte(e))
	}
	toks = append(toks, []byte("</s>"))
	special := make([]bool, len(toks))
	special[len(toks)-1] = true
	return NewVocab(toks, special, []int32{int32(len(toks) - 1)})
}

func matches(t *testing.T, g *Grammar, s string) bool {
	t.Helper()
	m := g.NewMatcher(testVocab())
	if err := m.AcceptBytes([]byte(s)); err != nil {
		return false
	}
	return m.Accepting()
}

func TestGBNFMatch(t *testing.T) {
	cases := []struct {
		gbnf string
		yes  []string
		no   []string
	}{
		{`root ::= "a" | "b"`, []string{"a", "b"}, []string{"", "c", "ab"}},
		{`root ::= "a"* "b"+`, []string{"b", "aab", "abbb"}, []string{"", "a", "ba"}},
		{`root ::= [a-c]{2,3}`, []string{"ab", "abc"}, []string{"a", "abca"}},
		{`root ::= [a-c]{2,}`, []string{"ab", "abcabc"}, []string{"a"}},
		{`root ::= [a-c]{,2}`, []string{"", "a", "ab"}, []string{"abc"}},
		{`root ::= [^a]`, []string{"b", "é", "日", "😀"}, []string{"a", "", "bb", "\xff"}},
		{`root ::= .`, []string{"a", "é", "😀"}, []string{"", "\xc3", "\xed\xa0\x80"}},
		{"root ::= x y\nx ::= \"(\" root? \")\"\ny ::= \"\"", []string{"()", "(())"}, []string{"(", "(()"}},
		{`root ::= "\x41\n\t\\\"" [\]\-]`, []string{"A\n\t\\\"]", "A\n\t\\\"-"}, []string{"A"}},
		{"root ::= ( \"a\"\n | \"b\" ) # comment\n", []string{"a", "b"}, []string{"ab"}},
		{"root ::= \"a\"\n   | \"b\"\n", []string{"a", "b"}, nil},
		{`root ::= [α-ω]+`, []string{"αβ", "ω"}, []string{"a", "Α"}},
	}
	for _, c := range cases {
		g, err := Parse(c.gbnf)
		if err != nil {
			t.Errorf("%q: %v", c.gbnf, err)
			continue
		}
		for _, s := range c.yes {
			if !matches(t, g, s) {
				t.Errorf("%q should match %q", c.gbnf, s)
			}
		}
		for _, s := range c.no {
			if matches(t, g, s) {
				t.Errorf("%q should not match %q", c.gbnf, s)
			}
		}
	}
}

func TestGBNFErrors(t *testing.T) {
	cases := []struct{ gbnf, want string }{
		{``, "no rules"},
		{`x ::= "a"`, `no "root"`},
		{`root ::= x`, `undefined rule "x"`},
		{`root ::= root "a" | "b"`, "left-recursive"},
		{"root ::= x \"a\"\nx ::= \"\"? root | \"b\"", "left-recursive"},
		{`root ::= "a" root`, "never finish"},
		{`root ::= "a`, "unterminated"},
		{`root ::= [a`, "unterminated"},
		{`root ::= "a"{99999}`, "more than"},
		{`root ::= ` + strings.Repeat(`"a"{4000} `, 100), "more than"},
		{`root ::= [z-a]`, "backwards"},
		{`root ::= "\q"`, "unknown escape"},
		{"root ::= \"a\"\nroot ::= \"b\"", "defined twice"},
		{strings.Repeat("(", 300) + `root ::= "a"`, "expected"},
		{`root ::= ` + strings.Repeat("(", 300) + `"a"` + strings.Repeat(")", 300), "nested"},
	}
	for _, c := range cases {
		_, err := Parse(c.gbnf)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: error %v, want %q", c.gbnf, err, c.want)
		}
	}
}

func TestLiteralRoundTrip(t *testing.T) {
	for _, s := range []string{"", "a", `"\`, "tab\there\nnl\r", "\x00\x1f\x7f", "é日😀", "<tool_call>", "]["} {
		g, err := Parse("root ::= " + Literal(s))
		if err != nil {
			t.Errorf("Literal(%q) = %s: %v", s, Literal(s), err)
			continue
		}
		if !matches(t, g, s) || (s != "" && matches(t, g, s[:len(s)-1])) {
			t.Errorf("Literal(%q) does not match exactly its text", s)
		}
	}
}

func TestShortest(t *testing.T) {
	g := MustParse(`root ::= "{" ( "\"a\"" | "12345" ) "}" | "[" root "]"`)
	m := g.NewMatcher(testVocab())
	if s := string(m.Shortest()); s != `{"a"}` || m.Remaining() != 5 {
		t.Errorf("shortest %q (remaining %d), want {\"a\"} (5)", s, m.Remaining())
	}
	if err := m.AcceptBytes([]byte("[[{1")); err != nil {
		t.Fatal(err)
	}
	if s := string(m.Shortest()); s != "2345}]]" || m.Remaining() != 7 {
		t.Errorf("shortest %q (remaining %d), want 2345}]] (7)", s, m.Remaining())
	}
}
