package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"shade/grammar"
)

const personSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":20},"age":{"type":"integer"},"likes":{"type":"array","items":{"enum":["cats","dogs","tea"]},"maxItems":3}},"required":["name","age","likes"],"additionalProperties":false}`

// TestConstrainedOutput: every way to ask for constrained output, on
// both endpoints, whole and streamed, gives text that parses and
// validates, whatever the budget.
func TestConstrainedOutput(t *testing.T) {
	_, url := start(t, Options{})
	msgs := `"messages":[{"role":"user","content":"Who are you?"}]`
	cases := []struct {
		name, path, fields, schema string
	}{
		{"response_format json_schema", "/v1/chat/completions", msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"person","schema":` + personSchema + `,"strict":true}}`, personSchema},
		{"response_format json_object", "/v1/chat/completions", msgs + `,"response_format":{"type":"json_object"}`, `{"type":"object"}`},
		{"json_schema", "/v1/completions", `"prompt":"Once upon a time","json_schema":` + personSchema, personSchema},
		{"grammar", "/v1/completions", `"prompt":"Once upon a time","grammar":"root ::= \"[\" (\"1\" | \"22\")? \"]\""`, `{"type":"array","items":{"type":"integer"},"maxItems":1}`},
	}
	for _, c := range cases {
		for _, maxTok := range []int{60, 200} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/max%d/stream=%v", c.name, maxTok, stream), func(t *testing.T) {
					body := fmt.Sprintf(`{%s,"max_tokens":%d,"temperature":1.2,"seed":%d,"stream":%v}`, c.fields, maxTok, maxTok, stream)
					resp, b := post(t, url+c.path, body)
					if resp.StatusCode != 200 {
						t.Fatalf("status %d: %s", resp.StatusCode, b)
					}
					var text string
					if stream {
						evs, _ := events(t, strings.NewReader(string(b)))
						text, _ = streamText(evs)
					} else {
						var r chatResp
						if err := json.Unmarshal(b, &r); err != nil {
							t.Fatal(err)
						}
						text = r.Choices[0].Message.Content + r.Choices[0].Text
					}
					if err := grammar.ValidateJSON([]byte(c.schema), []byte(text)); err != nil {
						t.Fatalf("output %q: %v", text, err)
					}
				})
			}
		}
	}
}

func TestConstraintErrors(t *testing.T) {
	_, url := start(t, Options{})
	msgs := `"messages":[{"role":"user","content":"x"}]`
	cases := []struct{ fields, param, want string }{
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","pattern":"^a+$"}}}`, "response_format.json_schema.schema", `"pattern"`},
		{`"json_schema":{"type":"integer","minimum":3}`, "json_schema", `"minimum"`},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x"}}`, "response_format.json_schema.schema", "needs json_schema.schema"},
		{`"response_format":{"type":"xml"}`, "response_format.type", "not one of"},
		{`"grammar":"root ::= root \"a\" | \"b\""`, "grammar", "left-recursive"},
		{`"grammar":"root ::= \"a\"","json_schema":{}`, "response_format", "only one of"},
		{`"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"strin"}}}`, "response_format.json_schema.schema", "unknown type"},
	}
	for _, c := range cases {
		resp, b := post(t, url+"/v1/chat/completions", `{`+msgs+`,`+c.fields+`}`)
		var e struct {
			Error APIError `json:"error"`
		}
		json.Unmarshal(b, &e)
		if resp.StatusCode != 400 || e.Error.Param == nil || *e.Error.Param != c.param || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s: status %d, %s; want 400 on %s naming %s", c.fields, resp.StatusCode, b, c.param, c.want)
		}
	}
}
