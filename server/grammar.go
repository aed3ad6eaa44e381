package server

import (
	"bytes"
	"encoding/json"
	"errors"

	"shade/engine"
	"shade/grammar"
)

// constraintFields are the request fields that constrain the output to a
// grammar: OpenAI's response_format, and llama-server's grammar (GBNF) and
// json_schema. At most one may be given.
type constraintFields struct {
	ResponseFormat *responseFormat `json:"response_format"`
	Grammar        *string         `json:"grammar"`
	JSONSchema     json.RawMessage `json:"json_schema"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"json_schema"`
}

// compile turns the fields into a grammar (nil: unconstrained). A schema
// feature the compiler does not support is a 400 naming it.
func (c *constraintFields) compile() (*grammar.Grammar, *APIError) {
	given := 0
	if c.ResponseFormat != nil && c.ResponseFormat.Type != "text" {
		given++
	}
	if c.Grammar != nil {
		given++
	}
	schemaGiven := len(c.JSONSchema) > 0 && !bytes.Equal(c.JSONSchema, []byte("null"))
	if schemaGiven {
		given++
	}
	if given > 1 {
		return nil, badRequest("response_format", "invalid_value", "only one of response_format, grammar and json_schema may constrain the output")
	}
	switch {
	case c.Grammar != nil:
		g, err := grammar.Parse(*c.Grammar)
		if err != nil {
			return nil, badRequest("grammar", "invalid_value", "%v", err)
		}
		return g, nil
	case schemaGiven:
		return compileSchema("json_schema", c.JSONSchema)
	case c.ResponseFormat == nil:
		return nil, nil
	}
	switch rf := c.ResponseFormat; rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return grammar.JSONObject(), nil
	case "json_schema":
		if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 || bytes.Equal(rf.JSONSchema.Schema, []byte("null")) {
			return nil, badRequest("response_format.json_schema.schema", "missing_required_parameter", "response_format of type json_schema needs json_schema.schema")
		}
		return compileSchema("response_format.json_schema.schema", rf.JSONSchema.Schema)
	case "":
		return nil, badRequest("response_format.type", "missing_required_parameter", "response_format needs a type: text, json_object or json_schema")
	default:
		return nil, badRequest("response_format.type", "invalid_value", "response_format.type %q is not one of text, json_object, json_schema", rf.Type)
	}
}

func compileSchema(param string, schema json.RawMessage) (*grammar.Grammar, *APIError) {
	g, err := grammar.FromJSONSchema(schema)
	var ue *grammar.UnsupportedError
	switch {
	case errors.As(err, &ue):
		return nil, badRequest(param, "unsupported_schema_feature", "the JSON schema uses %q at %s, which this server does not support", ue.Feature, ue.Path)
	case err != nil:
		return nil, badRequest(param, "invalid_value", "%v", err)
	}
	return g, nil
}

// grammarBudget refuses a request whose max_tokens cannot hold the
// grammar's shortest output (counted as one token per byte, which every
// vocabulary here can spell): its output could not end valid.
func (s *Server) grammarBudget(req engine.Request, prompt int) *APIError {
	if req.Grammar == nil {
		return nil
	}
	need := req.Grammar.NewMatcher(grammar.TokenizerVocab(s.e.Tok)).Remaining()
	budget := min(req.MaxTokens, s.opt.Ctx-prompt-1)
	if budget < need {
		return badRequest("max_tokens", "invalid_value", "max_tokens allows %d tokens, fewer than the %d this response format's shortest output may need", budget, need)
	}
	return nil
}
