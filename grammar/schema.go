package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// UnsupportedError names a JSON-schema feature the compiler does not
// implement. It is never dropped silently: a schema that uses one is
// refused (the server answers 400 naming Feature).
type UnsupportedError struct {
	Feature string // the keyword or value, e.g. "pattern" or "format: email"
	Path    string // where in the schema, as a JSON pointer
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("grammar: JSON schema feature %q at %s is not supported", e.Feature, e.Path)
}

// A SchemaError is a schema that is not valid JSON schema (or not JSON).
type SchemaError struct {
	Path string
	Msg  string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("grammar: JSON schema at %s: %s", e.Path, e.Msg)
}

// FromJSONSchema compiles a JSON schema into a grammar whose matches are
// exactly JSON documents valid for it (with optional whitespace between
// tokens). Supported: type (one or a list), properties, required,
// additionalProperties (false, true or a schema; when absent and properties
// are given, no others are generated — output stays valid either way),
// enum, const, items, minItems, maxItems, minLength, maxLength, local $ref
// ("#", "#/$defs/…", "#/definitions/…", recursion allowed), anyOf, oneOf
// (generated as anyOf), allOf of one schema, and the formats date, time,
// date-time and uuid. Annotations (title, description, default, examples,
// $schema, $id, $comment, deprecated, readOnly, writeOnly) are ignored;
// any other keyword is an *UnsupportedError.
func FromJSONSchema(schema []byte) (*Grammar, error) {
	src, err := SchemaToGBNF(schema)
	if err != nil {
		return nil, err
	}
	return Parse(src)
}

// SchemaToGBNF is FromJSONSchema's grammar as GBNF text (root rule "root").
func SchemaToGBNF(schema []byte) (string, error) {
	b := NewBuilder()
	root, err := b.AddSchema("", schema)
	if err != nil {
		return "", err
	}
	return b.Text(root), nil
}

// JSONObject returns the grammar of any JSON object (OpenAI's
// response_format json_object).
func JSONObject() *Grammar {
	g, err := FromJSONSchema([]byte(`{"type":"object"}`))
	if err != nil {
		panic(err) // the built-in schema compiles
	}
	return g
}

// Builder composes a grammar from JSON schemas, GBNF rules and literals:
// for example "one of these tool-call shapes between the model's markers"
// is Rule("call", Literal("<tool_call>")+" "+a+" "+Literal("</tool_call>"))
// with a and b from AddSchema. Rule names are shared: AddSchema prefixes
// its rules with the name it is given.
type Builder struct {
	rules map[string]string
	order []string
	n     int
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{rules: map[string]string{}} }

// Literal quotes s as a GBNF literal.
func Literal(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Rule adds (or replaces) rule name ::= body and returns name.
func (b *Builder) Rule(name, body string) string {
	if _, ok := b.rules[name]; !ok {
		b.order = append(b.order, name)
	}
	b.rules[name] = body
	return name
}

// Has reports whether rule name exists.
func (b *Builder) Has(name string) bool { _, ok := b.rules[name]; return ok }

// AddGBNF adds every rule of a GBNF grammar (names must not clash with
// rules already added); it is checked once Build is called.
func (b *Builder) AddGBNF(src string) error {
	p, err := parseGBNF(src)
	if err != nil {
		return err
	}
	for _, name := range p.order {
		if b.Has(name) {
			return fmt.Errorf("grammar: rule %q defined twice", name)
		}
		start, end := ruleSpan(src, name)
		b.Rule(name, src[start:end])
	}
	return nil
}

// ruleSpan finds the text of rule name's body in src.
func ruleSpan(src, name string) (int, int) {
	p := &parser{src: src, rules: map[string]*node{}}
	for {
		p.space(true)
		if p.pos >= len(p.src) {
			return 0, 0
		}
		n := p.name()
		p.space(false)
		p.pos += 3
		start := p.pos
		_, _ = p.alternatives(false)
		if n == name {
			return start, p.pos
		}
	}
}

// AddSchema compiles a JSON schema into rules whose names start with
// prefix (sanitised) and returns the rule matching a valid document.
func (b *Builder) AddSchema(prefix string, schema []byte) (string, error) {
	v, err := parseJSON(schema)
	if err != nil {
		return "", &SchemaError{Path: "#", Msg: "not JSON: " + err.Error()}
	}
	sc := &schemaCompiler{b: b, root: v, prefix: sanitize(prefix), refs: map[string]string{}}
	expr, err := sc.visit(v, "#", sc.prefix+"schema")
	if err != nil {
		return "", err
	}
	return b.Rule(b.unique(sc.prefix+"doc"), expr), nil
}

func (b *Builder) unique(name string) string {
	if !b.Has(name) {
		return name
	}
	for {
		b.n++
		n := fmt.Sprintf("%s-%d", name, b.n)
		if !b.Has(n) {
			return n
		}
	}
}

// Text returns the grammar as GBNF, starting with root ::= rootRule
// (unless rootRule is "root" itself).
func (b *Builder) Text(rootRule string) string {
	var s strings.Builder
	if rootRule != "root" {
		fmt.Fprintf(&s, "root ::= %s\n", rootRule)
	}
	for _, n := range b.order {
		fmt.Fprintf(&s, "%s ::= %s\n", n, b.rules[n])
	}
	return s.String()
}

// Build compiles the grammar whose start is rule rootRule.
func (b *Builder) Build(rootRule string) (*Grammar, error) {
	return Parse(b.Text(rootRule))
}

func sanitize(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if isNameChar(s[i]) {
			b.WriteByte(s[i])
		} else {
			b.WriteByte('-')
		}
	}
	if b.Len() > 0 {
		b.WriteByte('-')
	}
	return b.String()
}

// The JSON building blocks, shared by every schema of a Builder.
var primitives = map[string]string{
	"space":        `| " " | "\n" [ \t]{0,20}`,
	"json-char":    `[^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | "u" [0-9a-fA-F]{4})`,
	"json-string":  `"\"" json-char* "\"" space`,
	"json-intpart": `[0] | [1-9] [0-9]{0,15}`,
	"json-integer": `"-"? json-intpart space`,
	"json-number":  `"-"? json-intpart ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})? space`,
	"json-boolean": `("true" | "false") space`,
	"json-null":    `"null" space`,
	"json-value":   `json-object | json-array | json-string | json-number | json-boolean | json-null`,
	"json-object":  `"{" space (json-string ":" space json-value ("," space json-string ":" space json-value)*)? "}" space`,
	"json-array":   `"[" space (json-value ("," space json-value)*)? "]" space`,
	"json-date":    `[0-9]{4} "-" ( ("0" [13578] | "1" [02]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]) | ("0" [469] | "11") "-" ("0" [1-9] | [12] [0-9] | "30") | "02-" ("0" [1-9] | "1" [0-9] | "2" [0-8]) )`,
	"json-time":    `([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])`,
	"json-uuid":    `[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}`,
}

var primitiveDeps = map[string][]string{
	"json-char":    nil,
	"json-string":  {"json-char", "space"},
	"json-integer": {"json-intpart", "space"},
	"json-number":  {"json-intpart", "space"},
	"json-boolean": {"space"},
	"json-null":    {"space"},
	"json-value":   {"json-object", "json-array", "json-string", "json-number", "json-boolean", "json-null"},
	"json-object":  {"space", "json-string", "json-value"},
	"json-array":   {"space", "json-value"},
}

func (b *Builder) prim(name string) string {
	if b.Has(name) {
		return name
	}
	b.Rule(name, primitives[name])
	for _, d := range primitiveDeps[name] {
		b.prim(d)
	}
	return name
}

type schemaCompiler struct {
	b      *Builder
	root   *jv
	prefix string
	refs   map[string]string
}

var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$schema": true,
	"$id": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true,
}

// visit returns a GBNF expression matching the documents valid for s (at
// JSON pointer path), adding the rules it needs; name is a hint for them.
func (c *schemaCompiler) visit(s *jv, path, name string) (string, error) {
	switch s.kind {
	case 'b':
		if s.b {
			return c.b.prim("json-value"), nil
		}
		return "", &SchemaError{Path: path, Msg: "the schema false allows nothing"}
	case 'o':
	default:
		return "", &SchemaError{Path: path, Msg: "a schema must be an object or a boolean"}
	}
	known := map[string]bool{}
	for _, k := range []string{"type", "properties", "required", "additionalProperties", "enum", "const",
		"items", "minItems", "maxItems", "minLength", "maxLength", "$ref", "anyOf", "oneOf", "allOf", "format"} {
		known[k] = true
	}
	for _, k := range s.keys {
		if annotations[k] || strings.HasPrefix(k, "x-") {
			continue
		}
		if !known[k] {
			return "", &UnsupportedError{Feature: k, Path: path}
		}
	}
	if ref := s.get("$ref"); ref != nil {
		if len(s.keys) > 1 {
			for _, k := range s.keys {
				if k != "$ref" && !annotations[k] {
					return "", &UnsupportedError{Feature: "$ref with " + k, Path: path}
				}
			}
		}
		return c.ref(ref, path)
	}
	if cv := s.get("const"); cv != nil {
		return c.literal(cv), nil
	}
	if ev := s.get("enum"); ev != nil {
		if ev.kind != 'a' || len(ev.vals) == 0 {
			return "", &SchemaError{Path: path + "/enum", Msg: "enum must be a non-empty array"}
		}
		var alts []string
		for _, x := range ev.vals {
			alts = append(alts, c.literal(x))
		}
		return c.b.Rule(c.b.unique(name), strings.Join(alts, " | ")), nil
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		xs := s.get(key)
		if xs == nil {
			continue
		}
		if xs.kind != 'a' || len(xs.vals) == 0 {
			return "", &SchemaError{Path: path + "/" + key, Msg: key + " must be a non-empty array"}
		}
		if key == "allOf" && len(xs.vals) != 1 {
			return "", &UnsupportedError{Feature: "allOf with more than one schema", Path: path}
		}
		for _, k := range s.keys {
			if k != key && !annotations[k] && k != "type" {
				return "", &UnsupportedError{Feature: key + " with " + k, Path: path}
			}
		}
		var alts []string
		for i, x := range xs.vals {
			e, err := c.visit(x, fmt.Sprintf("%s/%s/%d", path, key, i), fmt.Sprintf("%s-%d", name, i))
			if err != nil {
				return "", err
			}
			alts = append(alts, e)
		}
		return c.b.Rule(c.b.unique(name), strings.Join(alts, " | ")), nil
	}
	var types []string
	if t := s.get("type"); t != nil {
		switch t.kind {
		case 's':
			types = []string{t.str}
		case 'a':
			for _, x := range t.vals {
				if x.kind != 's' {
					return "", &SchemaError{Path: path + "/type", Msg: "type must be a string or an array of strings"}
				}
				types = append(types, x.str)
			}
		default:
			return "", &SchemaError{Path: path + "/type", Msg: "type must be a string or an array of strings"}
		}
	} else if s.get("properties") != nil || s.get("additionalProperties") != nil || s.get("required") != nil {
		types = []string{"object"}
	} else if s.get("items") != nil || s.get("minItems") != nil || s.get("maxItems") != nil {
		types = []string{"array"}
	} else if s.get("format") != nil || s.get("minLength") != nil || s.get("maxLength") != nil {
		types = []string{"string"}
	} else {
		return c.b.prim("json-value"), nil
	}
	var alts []string
	for _, t := range types {
		var e string
		var err error
		switch t {
		case "object":
			e, err = c.object(s, path, name)
		case "array":
			e, err = c.array(s, path, name)
		case "string":
			e, err = c.str(s, path, name)
		case "number":
			e = c.b.prim("json-number")
		case "integer":
			e = c.b.prim("json-integer")
		case "boolean":
			e = c.b.prim("json-boolean")
		case "null":
			e = c.b.prim("json-null")
		default:
			return "", &SchemaError{Path: path + "/type", Msg: fmt.Sprintf("unknown type %q", t)}
		}
		if err != nil {
			return "", err
		}
		alts = append(alts, e)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return c.b.Rule(c.b.unique(name), strings.Join(alts, " | ")), nil
}

func (c *schemaCompiler) literal(v *jv) string {
	var buf bytes.Buffer
	v.encode(&buf)
	return Literal(buf.String()) + " " + c.b.prim("space")
}

func (c *schemaCompiler) ref(ref *jv, path string) (string, error) {
	if ref.kind != 's' {
		return "", &SchemaError{Path: path + "/$ref", Msg: "$ref must be a string"}
	}
	if r, ok := c.refs[ref.str]; ok {
		return r, nil
	}
	var target *jv
	var defName string
	switch {
	case ref.str == "#":
		target, defName = c.root, "self"
	case strings.HasPrefix(ref.str, "#/$defs/"), strings.HasPrefix(ref.str, "#/definitions/"):
		parts := strings.SplitN(ref.str[2:], "/", 2)
		defName = unescapePointer(parts[1])
		target = c.root.get(parts[0]).get(defName)
		if strings.Contains(parts[1], "/") {
			return "", &UnsupportedError{Feature: "$ref " + ref.str, Path: path}
		}
	default:
		return "", &UnsupportedError{Feature: "$ref " + ref.str + " (only local #/$defs/… refs)", Path: path}
	}
	if target == nil {
		return "", &SchemaError{Path: path + "/$ref", Msg: fmt.Sprintf("%s does not exist", ref.str)}
	}
	name := c.b.unique(c.prefix + "def-" + sanitizeName(defName))
	c.refs[ref.str] = name
	c.b.Rule(name, `""`) // reserve the name: the definition may refer to itself
	e, err := c.visit(target, ref.str, name+"-x")
	if err != nil {
		return "", err
	}
	c.b.Rule(name, e)
	return name, nil
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

func sanitizeName(s string) string {
	out := sanitize(s)
	return strings.TrimSuffix(out, "-")
}

func (c *schemaCompiler) count(s *jv, key, path string) (int, bool, error) {
	v := s.get(key)
	if v == nil {
		return 0, false, nil
	}
	if v.kind != 'n' {
		return 0, false, &SchemaError{Path: path + "/" + key, Msg: key + " must be a number"}
	}
	n, err := strconv.Atoi(v.num.String())
	if err != nil || n < 0 {
		return 0, false, &SchemaError{Path: path + "/" + key, Msg: key + " must be a non-negative integer"}
	}
	if n > maxRepeat {
		return 0, false, &UnsupportedError{Feature: fmt.Sprintf("%s above %d", key, maxRepeat), Path: path}
	}
	return n, true, nil
}

func repeatSuffix(lo int, hi int, hasHi bool) string {
	switch {
	case !hasHi && lo == 0:
		return "*"
	case !hasHi:
		return fmt.Sprintf("{%d,}", lo)
	case lo == hi:
		return fmt.Sprintf("{%d}", lo)
	}
	return fmt.Sprintf("{%d,%d}", lo, hi)
}

func (c *schemaCompiler) str(s *jv, path, name string) (string, error) {
	if f := s.get("format"); f != nil {
		if f.kind != 's' {
			return "", &SchemaError{Path: path + "/format", Msg: "format must be a string"}
		}
		if s.get("minLength") != nil || s.get("maxLength") != nil {
			return "", &UnsupportedError{Feature: "format with minLength/maxLength", Path: path}
		}
		var body string
		switch f.str {
		case "date":
			body = c.b.prim("json-date")
		case "time":
			body = c.b.prim("json-time")
		case "date-time":
			body = c.b.prim("json-date") + ` "T" ` + c.b.prim("json-time")
		case "uuid":
			body = c.b.prim("json-uuid")
		default:
			return "", &UnsupportedError{Feature: "format: " + f.str, Path: path}
		}
		return c.b.Rule(c.b.unique(name), `"\"" `+body+` "\"" `+c.b.prim("space")), nil
	}
	lo, _, err := c.count(s, "minLength", path)
	if err != nil {
		return "", err
	}
	hi, hasHi, err := c.count(s, "maxLength", path)
	if err != nil {
		return "", err
	}
	if hasHi && hi < lo {
		return "", &SchemaError{Path: path, Msg: "maxLength is below minLength"}
	}
	if lo == 0 && !hasHi {
		return c.b.prim("json-string"), nil
	}
	c.b.prim("json-string")
	return c.b.Rule(c.b.unique(name), `"\"" json-char`+repeatSuffix(lo, hi, hasHi)+` "\"" space`), nil
}

func (c *schemaCompiler) array(s *jv, path, name string) (string, error) {
	item := c.b.prim("json-value")
	if it := s.get("items"); it != nil {
		if it.kind == 'a' {
			return "", &UnsupportedError{Feature: "items as an array (tuple)", Path: path}
		}
		var err error
		if item, err = c.visit(it, path+"/items", name+"-item"); err != nil {
			return "", err
		}
	}
	lo, _, err := c.count(s, "minItems", path)
	if err != nil {
		return "", err
	}
	hi, hasHi, err := c.count(s, "maxItems", path)
	if err != nil {
		return "", err
	}
	if hasHi && hi < lo {
		return "", &SchemaError{Path: path, Msg: "maxItems is below minItems"}
	}
	sp := c.b.prim("space")
	var body string
	switch {
	case hasHi && hi == 0:
		body = `"[" ` + sp + ` "]" ` + sp
	case lo == 0:
		body = fmt.Sprintf(`"[" %s (%s ("," %s %s)%s)? "]" %s`, sp, item, sp, item, repeatSuffix(0, hi-1, hasHi), sp)
	default:
		body = fmt.Sprintf(`"[" %s %s ("," %s %s)%s "]" %s`, sp, item, sp, item, repeatSuffix(lo-1, hi-1, hasHi), sp)
	}
	return c.b.Rule(c.b.unique(name), body), nil
}

func (c *schemaCompiler) object(s *jv, path, name string) (string, error) {
	props := s.get("properties")
	if props != nil && props.kind != 'o' {
		return "", &SchemaError{Path: path + "/properties", Msg: "properties must be an object"}
	}
	required := map[string]bool{}
	var extraRequired []string // required, with no schema in properties: any value
	if r := s.get("required"); r != nil {
		if r.kind != 'a' {
			return "", &SchemaError{Path: path + "/required", Msg: "required must be an array"}
		}
		for _, x := range r.vals {
			if x.kind != 's' {
				return "", &SchemaError{Path: path + "/required", Msg: "required must list strings"}
			}
			if !required[x.str] && props.get(x.str) == nil {
				extraRequired = append(extraRequired, x.str)
			}
			required[x.str] = true
		}
	}
	sp := c.b.prim("space")
	// Extra properties: allowed by additionalProperties true or a schema,
	// or when the object lists no properties at all.
	extra := ""
	switch ap := s.get("additionalProperties"); {
	case ap == nil && props == nil:
		extra = c.b.prim("json-value")
	case ap == nil:
	case ap.kind == 'b' && ap.b:
		extra = c.b.prim("json-value")
	case ap.kind == 'b':
	default:
		var err error
		if extra, err = c.visit(ap, path+"/additionalProperties", name+"-extra"); err != nil {
			return "", err
		}
	}
	type prop struct {
		kv  string
		req bool
	}
	var ps []prop
	if props != nil {
		for i, k := range props.keys {
			ve, err := c.visit(props.vals[i], path+"/properties/"+k, name+"-"+sanitizeName(k))
			if err != nil {
				return "", err
			}
			kb, _ := json.Marshal(k)
			kv := c.b.Rule(c.b.unique(name+"-"+sanitizeName(k)+"-kv"), Literal(string(kb))+" "+sp+` ":" `+sp+" "+ve)
			ps = append(ps, prop{kv, required[k]})
		}
	}
	for _, k := range extraRequired {
		kb, _ := json.Marshal(k)
		kv := c.b.Rule(c.b.unique(name+"-"+sanitizeName(k)+"-kv"), Literal(string(kb))+" "+sp+` ":" `+sp+" "+c.b.prim("json-value"))
		ps = append(ps, prop{kv, true})
	}
	if extra != "" {
		c.b.prim("json-string")
		kv := c.b.Rule(c.b.unique(name+"-extra-kv"), `json-string ":" `+sp+" "+extra)
		ps = append(ps, prop{kv + "*", false}) // handled below
	}
	// suffix rules: rest(i, first) matches properties i… given whether a
	// property was already written (then each starts with a comma).
	rest := make([][2]string, len(ps)+1)
	rest[len(ps)] = [2]string{`""`, `""`}
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		isExtra := strings.HasSuffix(p.kv, "*")
		kv := strings.TrimSuffix(p.kv, "*")
		var first, later string
		nf, nl := rest[i+1][0], rest[i+1][1]
		switch {
		case isExtra:
			first = fmt.Sprintf(`(%s ("," %s %s)*)?`, kv, sp, kv)
			later = fmt.Sprintf(`("," %s %s)*`, sp, kv)
		case p.req:
			first = kv + " " + nl
			later = fmt.Sprintf(`"," %s %s %s`, sp, kv, nl)
		default:
			first = fmt.Sprintf(`%s %s | %s`, kv, nl, nf)
			later = fmt.Sprintf(`("," %s %s)? %s`, sp, kv, nl)
		}
		rest[i] = [2]string{
			c.b.Rule(c.b.unique(fmt.Sprintf("%s-p%d-first", name, i)), first),
			c.b.Rule(c.b.unique(fmt.Sprintf("%s-p%d-later", name, i)), later),
		}
	}
	return c.b.Rule(c.b.unique(name), fmt.Sprintf(`"{" %s %s "}" %s`, sp, rest[0][0], sp)), nil
}
