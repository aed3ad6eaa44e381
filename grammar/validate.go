package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// ValidateJSON checks document doc against schema with the subset of JSON
// schema FromJSONSchema compiles (plus additionalProperties' standard
// meaning: absent allows any). It is written independently of the
// compiler, from the specification, so tests can check generated output
// with it; a schema feature outside the subset is an error.
func ValidateJSON(schema, doc []byte) error {
	var s, d any
	if err := decodeNumber(schema, &s); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if err := decodeNumber(doc, &d); err != nil {
		return fmt.Errorf("document is not JSON: %w", err)
	}
	return validate(s, s, d, "#", 0)
}

func decodeNumber(b []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func validate(root, schema, v any, at string, depth int) error {
	if depth > 256 {
		return fmt.Errorf("%s: schema recursion too deep", at)
	}
	switch s := schema.(type) {
	case bool:
		if !s {
			return fmt.Errorf("%s: the schema false allows nothing", at)
		}
		return nil
	case map[string]any:
		if ref, ok := s["$ref"].(string); ok {
			target := root
			if ref != "#" {
				parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
				for _, p := range parts {
					m, _ := target.(map[string]any)
					target = m[unescapePointer(p)]
				}
			}
			if target == nil {
				return fmt.Errorf("%s: $ref %s not found", at, ref)
			}
			return validate(root, target, v, at, depth+1)
		}
		if c, ok := s["const"]; ok && !jsonEqual(c, v) {
			return fmt.Errorf("%s: %v is not the const %v", at, v, c)
		}
		if e, ok := s["enum"].([]any); ok {
			found := false
			for _, x := range e {
				found = found || jsonEqual(x, v)
			}
			if !found {
				return fmt.Errorf("%s: %v is not in the enum", at, v)
			}
		}
		if xs, ok := s["anyOf"].([]any); ok {
			if n := countValid(root, xs, v, at, depth); n == 0 {
				return fmt.Errorf("%s: matches none of anyOf", at)
			}
		}
		if xs, ok := s["oneOf"].([]any); ok {
			if n := countValid(root, xs, v, at, depth); n != 1 {
				return fmt.Errorf("%s: matches %d of oneOf", at, n)
			}
		}
		if xs, ok := s["allOf"].([]any); ok {
			if n := countValid(root, xs, v, at, depth); n != len(xs) {
				return fmt.Errorf("%s: fails allOf", at)
			}
		}
		if t, ok := s["type"]; ok {
			var ts []any
			if str, ok := t.(string); ok {
				ts = []any{str}
			} else {
				ts, _ = t.([]any)
			}
			okType := false
			for _, x := range ts {
				okType = okType || hasType(v, x.(string))
			}
			if !okType {
				return fmt.Errorf("%s: %v is not of type %v", at, v, t)
			}
		}
		switch v := v.(type) {
		case map[string]any:
			props, _ := s["properties"].(map[string]any)
			if req, ok := s["required"].([]any); ok {
				for _, r := range req {
					if _, ok := v[r.(string)]; !ok {
						return fmt.Errorf("%s: missing required property %q", at, r)
					}
				}
			}
			for k, x := range v {
				if ps, ok := props[k]; ok {
					if err := validate(root, ps, x, at+"/"+k, depth+1); err != nil {
						return err
					}
					continue
				}
				if ap, ok := s["additionalProperties"]; ok {
					if err := validate(root, ap, x, at+"/"+k, depth+1); err != nil {
						return fmt.Errorf("%s: additional property %q: %w", at, k, err)
					}
				}
			}
		case []any:
			if n, ok := s["minItems"].(json.Number); ok && int64(len(v)) < mustInt(n) {
				return fmt.Errorf("%s: %d items, fewer than minItems %v", at, len(v), n)
			}
			if n, ok := s["maxItems"].(json.Number); ok && int64(len(v)) > mustInt(n) {
				return fmt.Errorf("%s: %d items, more than maxItems %v", at, len(v), n)
			}
			if it, ok := s["items"]; ok {
				for i, x := range v {
					if err := validate(root, it, x, fmt.Sprintf("%s/%d", at, i), depth+1); err != nil {
						return err
					}
				}
			}
		case string:
			n := int64(utf8.RuneCountInString(v))
			if m, ok := s["minLength"].(json.Number); ok && n < mustInt(m) {
				return fmt.Errorf("%s: string shorter than minLength %v", at, m)
			}
			if m, ok := s["maxLength"].(json.Number); ok && n > mustInt(m) {
				return fmt.Errorf("%s: string longer than maxLength %v", at, m)
			}
			if f, ok := s["format"].(string); ok {
				if err := checkFormat(f, v); err != nil {
					return fmt.Errorf("%s: %w", at, err)
				}
			}
		}
		return nil
	}
	return fmt.Errorf("%s: a schema must be an object or a boolean", at)
}

func checkFormat(f, v string) error {
	var err error
	switch f {
	case "date":
		_, err = time.Parse("2006-01-02", v)
	case "time":
		_, err = time.Parse("15:04:05.999999999Z07:00", v)
	case "date-time":
		_, err = time.Parse(time.RFC3339Nano, v)
	case "uuid":
		if !uuidRE.MatchString(v) {
			err = fmt.Errorf("not a uuid")
		}
	default:
		err = fmt.Errorf("unknown format %q", f)
	}
	if err != nil {
		return fmt.Errorf("%q is not a %s: %v", v, f, err)
	}
	return nil
}

func mustInt(n json.Number) int64 {
	i, _ := n.Int64()
	return i
}

func countValid(root any, xs []any, v any, at string, depth int) int {
	n := 0
	for _, x := range xs {
		if validate(root, x, v, at, depth+1) == nil {
			n++
		}
	}
	return n
}

func hasType(v any, t string) bool {
	switch v := v.(type) {
	case map[string]any:
		return t == "object"
	case []any:
		return t == "array"
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case nil:
		return t == "null"
	case json.Number:
		if t == "number" {
			return true
		}
		if t == "integer" {
			_, err := v.Int64()
			return err == nil
		}
	}
	return false
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(normNumbers(a))
	jb, _ := json.Marshal(normNumbers(b))
	return bytes.Equal(ja, jb)
}

func normNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		f, _ := v.Float64()
		return f
	case map[string]any:
		m := map[string]any{}
		for k, x := range v {
			m[k] = normNumbers(x)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normNumbers(x)
		}
		return out
	}
	return v
}
