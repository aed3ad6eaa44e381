package grammar

import (
	"strings"
	"testing"
)

// exercise runs a compiled grammar a little: a few masks and accepts on a
// small vocabulary, which must never panic.
func exercise(g *Grammar) {
	v := fuzzVocab
	m := g.NewMatcher(v)
	m.SetBudget(8)
	for range 8 {
		ids := maskIDs(m.Mask())
		if m.Err() != nil || len(ids) == 0 {
			return
		}
		m.Accept(ids[len(ids)/2])
		if m.Done() || m.Err() != nil {
			return
		}
	}
	_ = m.Shortest()
}

var fuzzVocab = testVocab(`{"`, `":`, "ab", "é", "\xe6\x97", "\xa5", "null")

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`root ::= "a" | "b"`,
		`root ::= [a-z]{2,5} ("x" root)?`,
		"root ::= x\nx ::= [^\\x00-\\x1F\"]* | \"\\u00e9\"",
		`root ::= (("a"){0,3}){2}`,
		`root ::= . [\]\\-]+ "\U0001F600"`,
		strings.Repeat("(", 50) + `root ::= "a"`,
		`root ::= a` + "\n" + `a ::= "x" | a "y"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := Parse(src)
		if err != nil {
			return
		}
		exercise(g)
	})
}

func FuzzSchema(f *testing.F) {
	for _, s := range testSchemas {
		f.Add(s)
	}
	f.Add(`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`)
	f.Add(`{"type":"array","items":{"type":"array","items":{"type":"array"}},"minItems":4096}`)
	f.Add(`{"type":"string","minLength":4096,"maxLength":4096}`)
	f.Fuzz(func(t *testing.T, schema string) {
		g, err := FromJSONSchema([]byte(schema))
		if err != nil {
			return
		}
		exercise(g)
	})
}

// TestHostileGrammars: deep nesting, huge repetitions and recursion without
// end are clear errors or bounded work, never a hang or a crash.
func TestHostileGrammars(t *testing.T) {
	var chain strings.Builder
	chain.WriteString("root ::= r0\n")
	const n = 20000
	for i := 0; i < n; i++ { // written so that each rule refers to a later one
		if i+1 < n {
			chain.WriteString("r" + itoa(i) + " ::= \"a\" r" + itoa(i+1) + "\n")
		} else {
			chain.WriteString("r" + itoa(i) + " ::= \"a\"\n")
		}
	}
	g, err := Parse(chain.String())
	if err != nil {
		t.Fatal(err)
	}
	if m := g.NewMatcher(fuzzVocab); m.Remaining() != n {
		t.Errorf("shortest of the chain: %d, want %d", m.Remaining(), n)
	}
	// Nesting deeper than the automaton follows is refused, not grown.
	deep := MustParse(`root ::= "[" root? "]"`)
	m := deep.NewMatcher(fuzzVocab)
	err = m.AcceptBytes([]byte(strings.Repeat("[", maxStackHeight+10)))
	if err == nil {
		t.Error("nesting deeper than the stack limit was accepted")
	}
	// An ambiguous grammar whose stack sets double with every byte.
	amb := MustParse(`root ::= ("a" | "a" "a" | "a" "a" "a")*`)
	m = amb.NewMatcher(fuzzVocab)
	if err := m.AcceptBytes([]byte(strings.Repeat("a", 2000))); err != nil {
		t.Logf("ambiguous grammar: %v", err)
	}
	exercise(amb)
	// The JSON schema compiler bounds its own recursion.
	schema := strings.Repeat(`{"type":"array","items":`, 200) + `{}` + strings.Repeat(`}`, 200)
	if _, err := FromJSONSchema([]byte(schema)); err == nil {
		t.Error("a schema nested 200 deep compiled")
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
