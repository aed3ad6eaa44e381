package grammar

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

var testSchemas = []string{
	`{"type":"object"}`,
	`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false}`,
	`{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"},"c":{"type":"number"}},"required":["b"]}`,
	`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","maxLength":3},"minItems":1,"maxItems":3}},"required":["tags"]}`,
	`{"type":"object","properties":{"color":{"enum":["red","green",3,null]},"k":{"const":{"x":[1,"y"]}}},"required":["color","k"]}`,
	`{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"]}},"$ref":"#/$defs/node"}`,
	`{"type":"object","properties":{"d":{"type":"string","format":"date"},"t":{"type":"string","format":"time"},"dt":{"type":"string","format":"date-time"},"u":{"type":"string","format":"uuid"}},"required":["d","t","dt","u"]}`,
	`{"type":"object","properties":{"x":{"type":["string","integer"]},"y":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["x","y"],"additionalProperties":{"type":"boolean"}}`,
	`{"type":"array","items":{"type":"object","properties":{"p":{"type":"object","properties":{"q":{"type":"string","minLength":2}},"required":["q"]}}},"maxItems":2}`,
	`{"type":"string","minLength":1,"maxLength":5}`,
	`{"type":"object","properties":{"a":{"type":"null"}},"required":["b","a"]}`,
	`{"type":"object","properties":{"s":{"type":"string"}},"required":["s"],"title":"t","description":"d","$schema":"https://json-schema.org/draft/2020-12/schema"}`,
}

// randomText walks m to the end choosing uniformly among the allowed
// tokens: what a model with random weights does under the mask.
func randomText(t *testing.T, m *Matcher, v *Vocab, rng *rand.Rand, budget int) string {
	t.Helper()
	m.SetBudget(budget)
	var out []byte
	for i := 0; i < budget; i++ {
		mask := m.Mask()
		if err := m.Err(); err != nil {
			t.Fatalf("mask: %v (after %q)", err, out)
		}
		var ids []int32
		for w, word := range mask {
			for word != 0 {
				b := bits.TrailingZeros64(word)
				ids = append(ids, int32(w*64+b))
				word &^= 1 << b
			}
		}
		tok := ids[rng.IntN(len(ids))]
		m.Accept(tok)
		if err := m.Err(); err != nil {
			t.Fatalf("accept %d: %v", tok, err)
		}
		if m.Done() {
			return string(out)
		}
		out = append(out, v.text[tok]...)
	}
	if !m.Accepting() {
		t.Fatalf("budget %d ran out with %q incomplete", budget, out)
	}
	return string(out)
}

func TestSchemaRandomWalksValidate(t *testing.T) {
	v := testVocab(`{"`, `":`, `", "`, "true", "null", "ab", "é", "\xe6\x97", "\xa5")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, schema := range testSchemas {
		g, err := FromJSONSchema([]byte(schema))
		if err != nil {
			t.Errorf("%s: %v", schema, err)
			continue
		}
		for i := 0; i < 30; i++ {
			m := g.NewMatcher(v)
			budget := m.Remaining() + rng.IntN(200)
			text := randomText(t, m, v, rng, budget)
			if err := ValidateJSON([]byte(schema), []byte(text)); err != nil {
				t.Errorf("%s: generated %q: %v", schema, text, err)
			}
		}
	}
}

func TestSchemaAccepts(t *testing.T) {
	cases := []struct {
		schema string
		yes    []string
		no     []string
	}{
		{testSchemas[1], []string{`{"name":"x","age":3}`, `{ "name" : "é\n\"", "age": -10 }`}, []string{`{"age":3,"name":"x"}`, `{"name":"x"}`, `{"name":"x","age":3,"z":1}`, `{"name":"x","age":3.5}`}},
		{testSchemas[2], []string{`{"b":null}`, `{"a":true,"b":null,"c":1.5e3}`, `{"b":null,"c":0}`}, []string{`{}`, `{"a":true}`, `{"c":01,"b":null}`}},
		{testSchemas[3], []string{`{"tags":["a","abc"]}`}, []string{`{"tags":[]}`, `{"tags":["abcd"]}`, `{"tags":["a","b","c","d"]}`}},
		{testSchemas[4], []string{`{"color":"red","k":{"x":[1,"y"]}}`, `{"color":null,"k":{"x":[1,"y"]}}`}, []string{`{"color":"blue","k":{"x":[1,"y"]}}`}},
		{testSchemas[6], []string{`{"d":"2024-02-28","t":"23:59:59Z","dt":"2024-12-31T00:00:00.5+01:00","u":"123e4567-e89b-12d3-a456-426614174000"}`}, []string{`{"d":"2024-02-30","t":"23:59:59Z","dt":"2024-12-31T00:00:00Z","u":"123e4567-e89b-12d3-a456-426614174000"}`}},
		{`{"type":"object"}`, []string{`{}`, `{"a":{"b":[1,2,{}]}}`}, []string{`[]`, `{"a"}`}},
	}
	for _, c := range cases {
		g, err := FromJSONSchema([]byte(c.schema))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range c.yes {
			if !matches(t, g, s) {
				t.Errorf("%s should accept %s", c.schema, s)
			}
			if err := ValidateJSON([]byte(c.schema), []byte(s)); err != nil {
				t.Errorf("validator refuses %s: %v", s, err)
			}
		}
		for _, s := range c.no {
			if matches(t, g, s) {
				t.Errorf("%s should refuse %s", c.schema, s)
			}
		}
	}
}

func TestSchemaUnsupported(t *testing.T) {
	cases := []struct{ schema, feature string }{
		{`{"type":"string","pattern":"^a"}`, "pattern"},
		{`{"type":"integer","minimum":0}`, "minimum"},
		{`{"type":"string","format":"email"}`, "format: email"},
		{`{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}`, "uniqueItems"},
		{`{"allOf":[{"type":"string"},{"type":"string"}]}`, "allOf with more than one schema"},
		{`{"$ref":"https://example.com/s.json"}`, "$ref https://example.com/s.json (only local #/$defs/… refs)"},
		{`{"type":"array","items":[{"type":"string"}]}`, "items as an array (tuple)"},
		{`{"not":{"type":"string"}}`, "not"},
	}
	for _, c := range cases {
		_, err := FromJSONSchema([]byte(c.schema))
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Feature != c.feature {
			t.Errorf("%s: error %v, want unsupported %q", c.schema, err, c.feature)
		}
	}
	for _, bad := range []string{`{`, `[]`, `{"type":7}`, `{"type":"strin"}`, `{"enum":[]}`, `{"$ref":"#/$defs/none"}`, `false`, `{"type":"string","minLength":-1}`} {
		_, err := FromJSONSchema([]byte(bad))
		var se *SchemaError
		if !errors.As(err, &se) {
			t.Errorf("%s: error %v, want a SchemaError", bad, err)
		}
	}
}

func TestBuilderComposes(t *testing.T) {
	b := NewBuilder()
	a, err := b.AddSchema("get_weather", []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.AddSchema("get_time", []byte(`{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddGBNF("ws ::= [ ]?\n"); err != nil {
		t.Fatal(err)
	}
	b.Rule("call", Literal("<tool_call>")+" ws ("+a+" | "+c+") ws "+Literal("</tool_call>"))
	g, err := b.Build("call")
	if err != nil {
		t.Fatalf("%v\n%s", err, b.Text("call"))
	}
	if !matches(t, g, `<tool_call> {"city":"Paris"}</tool_call>`) || !matches(t, g, `<tool_call>{"tz":"UTC"} </tool_call>`) {
		t.Errorf("composed grammar refuses a call\n%s", g.Source())
	}
	if matches(t, g, `<tool_call>{"city":1}</tool_call>`) || !strings.HasPrefix(g.Source(), "root ::= call") {
		t.Errorf("composed grammar accepts a bad call")
	}
}
