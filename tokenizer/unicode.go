package tokenizer

import "unicode"

// cflags classifies a code point the way llama.cpp's pre-tokenizers see it
// (unicode_cpt_flags): \p{L}, \p{N}, \s (the Unicode White_Space property),
// and fValid for every code point inside the text being split (llama.cpp's
// non-zero as_uint(); positions past the end have no flags).
type cflags uint8

const (
	fLetter cflags = 1 << iota
	fNumber
	fSpace
	fValid
)

var asciiFlags = func() (t [128]cflags) {
	for c := range t {
		f := fValid
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			f |= fLetter
		case '0' <= c && c <= '9':
			f |= fNumber
		case c == ' ', '\t' <= c && c <= '\r':
			f |= fSpace
		}
		t[c] = f
	}
	return t
}()

// flagsOf returns the flags of r. The categories come from Go's unicode
// tables (Unicode 15.0); llama.cpp's table is Unicode 15.1, whose only change
// that matters here is CJK Extension I (U+2EBF0–U+2EE5D), letters, patched in.
func flagsOf(r rune) cflags {
	if r < 128 {
		return asciiFlags[r]
	}
	switch {
	case unicode.IsLetter(r), 0x2EBF0 <= r && r <= 0x2EE5D:
		return fValid | fLetter
	case unicode.IsNumber(r):
		return fValid | fNumber
	case unicode.Is(unicode.White_Space, r):
		return fValid | fSpace
	}
	return fValid
}

// isPunct reports \p{P} (the default BPE pre-tokenizer's first regex).
func isPunct(r rune) bool { return unicode.IsPunct(r) }

// GPT-2's byte ↔ unicode mapping (bytes_to_unicode): printable Latin-1 bytes
// stand for themselves, the other 68 bytes map to U+0100… in byte order.
var (
	byteRune [256]rune   // byte → code point
	runeByte [324]int16  // code point → byte, -1 if none
	byteText [256]string // byte → UTF-8 of its code point
)

func init() {
	for i := range runeByte {
		runeByte[i] = -1
	}
	n := rune(0)
	for b := 0; b < 256; b++ {
		if 0x21 <= b && b <= 0x7E || 0xA1 <= b && b <= 0xAC || 0xAE <= b && b <= 0xFF {
			byteRune[b] = rune(b)
		} else {
			byteRune[b] = 256 + n
			n++
		}
		runeByte[byteRune[b]] = int16(b)
		byteText[b] = string(byteRune[b])
	}
}
