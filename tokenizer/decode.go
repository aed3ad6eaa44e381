package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// piece is llama.cpp's token_to_piece(id, special=true): the bytes a token
// stands for. Control and unknown tokens render as their text; unused and
// undefined ones as nothing.
func (t *Tokenizer) piece(id int32) []byte {
	a, text := t.attrs[id], t.tokens[id]
	switch {
	case a&(attrUnknown|attrControl|attrUserDefined) != 0:
		return []byte(text)
	case a&attrNormal != 0:
		if t.kind == kindSPM {
			return []byte(strings.ReplaceAll(text, "▁", " "))
		}
		return decodeByteLevel(text)
	case a&attrByte != 0:
		b, _ := parseByteToken(text)
		return []byte{b}
	}
	return nil
}

// TokenBytes returns the bytes token id stands for, after undoing the "▁" or
// byte-level escapes: a byte token gives its byte, a control token its text
// (Decode, unlike TokenBytes, drops control tokens). It returns nil for an id
// out of range. The result must not be modified.
func (t *Tokenizer) TokenBytes(id int32) []byte {
	if !t.valid(id) {
		return nil
	}
	return t.pieces[id]
}

// textPiece is token_to_piece(id, special): without special, control and
// unknown tokens give nothing. Ids out of range give nothing.
func (t *Tokenizer) textPiece(id int32, special bool) []byte {
	if !t.valid(id) || !special && t.attrs[id]&(attrUnknown|attrControl) != 0 {
		return nil
	}
	return t.pieces[id]
}

// Decode converts ids to text as llama.cpp's llama_detokenize with
// remove_special=false, unparse_special=false: control and unknown tokens
// give nothing; in vocabs that add a space prefix (SPM) the first token loses
// one leading space (a leading BOS, which renders as nothing, uses that up, so
// text after BOS keeps its space, as in llama.cpp); and where the vocab asks
// for it (gpt-2 and llama-3 pre-tokenizers) spaces before ?!., and in
// contractions are cleaned up. Ids out of range give nothing. The bytes are
// not checked for UTF-8 validity.
func (t *Tokenizer) Decode(ids []int32) string { return t.decode(ids, false) }

// DecodeSpecial is Decode with control and unknown tokens rendered as their
// text (llama_detokenize with unparse_special=true).
func (t *Tokenizer) DecodeSpecial(ids []int32) string { return t.decode(ids, true) }

func (t *Tokenizer) decode(ids []int32, special bool) string {
	var out []byte
	for i, id := range ids {
		p := t.textPiece(id, special)
		if i == 0 && t.addSpacePrefix && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		out = append(out, p...)
	}
	if t.cleanSpaces {
		out = cleanSpaces(out)
	}
	return string(out)
}

// cleanSpaces is the clean_spaces pass of llama.cpp's detokenize, done in
// place: " ?" " !" " ." " ," lose the space, " ' " becomes "'", and " 's",
// " 'm", " 're", " 've" lose the space.
func cleanSpaces(text []byte) []byte {
	// First pass: space before ?!.,
	n := len(text)
	total := min(n, 1)
	for i := 1; i < n; i++ {
		x := text[i]
		if text[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			total--
		}
		text[total] = x
		total++
	}
	// Second pass: a single apostrophe between spaces.
	n = total
	total = min(n, 1)
	for i := 1; i < n; i++ {
		x := text[i]
		if x == '\'' && i+1 < n && text[i-1] == ' ' && text[i+1] == ' ' {
			total--
			i++
			text[i] = 0 // the next space is dropped, and is no space for the next test
		}
		text[total] = x
		total++
	}
	// Third pass: contractions.
	n = total
	total = min(n, 1)
	for i := 1; i < n; i++ {
		x := text[i]
		if text[i-1] == ' ' && x == '\'' && i+1 < n {
			switch x1 := text[i+1]; {
			case x1 == 't' || x1 == 'd':
			case x1 == 's' || x1 == 'm':
				total--
			case i+2 < n:
				if x2 := text[i+2]; x1 == 'r' && x2 == 'e' || x1 == 'v' && x2 == 'e' {
					total--
				}
			}
		}
		text[total] = x
		total++
	}
	return text[:total]
}

// Decoder turns a stream of token ids into text as it is generated. The
// concatenation of everything Add and Flush return equals Decode of all the
// ids, except that bytes which are not valid UTF-8 come out as U+FFFD (one per
// byte), so every returned chunk is valid UTF-8. A UTF-8 sequence split across
// tokens (SPM byte fallback, byte-level BPE) is held back until it is
// complete; where Decode cleans up spaces, a trailing space or apostrophe
// (and up to two bytes after an apostrophe) is held back until the clean-up
// cannot change it.
type Decoder struct {
	// Special renders control and unknown tokens as their text (the
	// streaming form of DecodeSpecial). Set it before the first Add.
	Special bool
	// Exact returns the tokens' bytes as they are: no leading space
	// dropped, no spaces cleaned up (grammar-constrained output, whose
	// bytes the grammar has checked). Set it before the first Add.
	Exact bool
	// Continuation says the tokens continue a text decoded elsewhere (a
	// completion after its prompt): the first keeps its leading space, as
	// llama.cpp's token_to_piece gives it, so that prompt + completion
	// reads as one text. Set it before the first Add.
	Continuation bool

	t       *Tokenizer
	started bool
	pending []byte // decoded, not yet returned
}

// NewDecoder returns a streaming decoder for t.
func NewDecoder(t *Tokenizer) *Decoder { return &Decoder{t: t} }

// Add decodes id and returns the text that became final.
func (d *Decoder) Add(id int32) string {
	p := d.t.textPiece(id, d.Special)
	if !d.started && !d.Exact && !d.Continuation && d.t.addSpacePrefix && len(p) > 0 && p[0] == ' ' {
		p = p[1:]
	}
	d.started = true
	d.pending = append(d.pending, p...)
	cut := d.cut()
	if cut == 0 {
		return ""
	}
	s := d.emit(d.pending[:cut])
	d.pending = d.pending[:copy(d.pending, d.pending[cut:])]
	return s
}

// Flush returns everything still held back and resets the decoder for a new
// sequence (the next Add is again the first token).
func (d *Decoder) Flush() string {
	s := d.emit(d.pending)
	d.pending = d.pending[:0]
	d.started = false
	return s
}

// cut returns how much of pending can be returned now.
func (d *Decoder) cut() int {
	b := d.pending
	end := len(b)
	// Hold back an incomplete UTF-8 sequence at the end.
	for i := end - 1; i >= 0 && i >= end-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				end = i
			}
			break
		}
	}
	if !d.t.cleanSpaces || d.Exact {
		return end
	}
	// The clean-up only removes spaces, deciding from the few bytes after a
	// space or apostrophe (" 're" needs the "e"). Text can be cut after a
	// byte that is neither, with no apostrophe in the two bytes before it:
	// whatever follows, the clean-up of the two sides is then independent.
	for p := end; p >= 1; p-- {
		if b[p-1] != ' ' && b[p-1] != '\'' && (p < 2 || b[p-2] != '\'') && (p < 3 || b[p-3] != '\'') &&
			(p == len(b) || utf8.RuneStart(b[p])) {
			return p
		}
	}
	return 0
}

func (d *Decoder) emit(b []byte) string {
	if d.t.cleanSpaces && !d.Exact {
		b = cleanSpaces(b) // in place: b is not used again
	}
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}
