package grammar

import (
	"testing"
)

// benchSchema is an object with a string, a number, an enum and an array
// of nested objects: a typical structured-output schema.
const benchSchema = `{"type":"object","properties":{
 "name":{"type":"string"},"age":{"type":"integer"},"mood":{"enum":["happy","sad"]},
 "friends":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"since":{"type":"string","format":"date"}},"required":["name","since"]}}},
 "required":["name","age","mood","friends"]}`

// BenchmarkMask measures one step's mask on the llama3 vocabulary (128k
// tokens) at two points of a document: mid-object (a property name or
// value may start) and mid-string. "cold" recomputes the mask every time
// (the automaton's transitions already known); "warm" is the cached mask
// of a state seen before; "fresh" builds a new matcher, advances it over
// the prefix and computes the mask (everything a request's first visit
// to that state costs).
func BenchmarkMask(b *testing.B) {
	tk := loadTokenizer(b, "tokenizer/ggml-vocab-llama3.gguf")
	v := TokenizerVocab(tk)
	g, err := FromJSONSchema([]byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, prefix string }{
		{"mid-object", `{"name": "Ann", "age": 7, "mood": "happy", "friends": [{"name": "Bo", "since": "2020-01-02"}, `},
		{"mid-string", `{"name": "Ann, who lived by the sea and liked `},
	} {
		m := g.NewMatcher(v)
		if err := m.AcceptBytes([]byte(c.prefix)); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/cold", func(b *testing.B) {
			for b.Loop() {
				clear(m.sh.masks)
				m.sh.order = m.sh.order[:0]
				m.Mask()
			}
			b.ReportMetric(float64(len(maskIDs(m.Mask()))), "allowed")
		})
		b.Run(c.name+"/warm", func(b *testing.B) {
			for b.Loop() {
				m.Mask()
			}
		})
		b.Run(c.name+"/fresh", func(b *testing.B) {
			for b.Loop() {
				f := g.NewMatcher(v)
				_ = f.AcceptBytes([]byte(c.prefix))
				f.Mask()
			}
		})
	}
}
