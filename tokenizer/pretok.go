package tokenizer

// Pre-tokenizers split text into words before byte-level BPE merges them.
// llama.cpp expresses them as regexes (unicode_regex_split) but runs the
// GPT-2 and Llama-3 ones through hand-written matchers; the Qwen2 regex goes
// through std::regex on a text whose code points are collapsed to their
// category. All three are written out by hand here, each word boundary
// decided as llama.cpp decides it (lookahead included).
//
// A stage refines a list of chunk lengths (in code points) into word
// lengths; chunk ends behave as end of text. A preSplitter is a sequence of
// stages, like llama.cpp's list of regexes.

type splitStage func(cpts []rune, chunks []int, out []int) []int

type preSplitter []splitStage

type preInfo struct {
	split        preSplitter
	ignoreMerges bool // a word that is itself a token is not merged (llama-3)
	addBOS       bool // default for tokenizer.ggml.add_bos_token
	cleanSpaces  bool // detokenizer clean-up (clean_up_tokenization_spaces)
}

var (
	gpt2Split   = preSplitter{splitGPT2}
	llama3Split = preSplitter{func(c []rune, ch, out []int) []int { return splitLlama3(c, ch, out, 3) }}
	qwen2Split  = preSplitter{func(c []rune, ch, out []int) []int { return splitLlama3(c, ch, out, 1) }}
	// llama.cpp's regexes for "default": [\p{P}\$\+<=>\^~\|]+, then GPT-2's, then \p{N}+, then [0-9][0-9][0-9].
	defaultSplit = preSplitter{splitPunctRuns, splitGPT2, splitNumberRuns, splitDigitTriples}
)

// preTokenizers maps tokenizer.ggml.pre to its splitter and the flags llama.cpp
// sets with it (llama_vocab::impl::load). Only names whose whole behaviour is
// one of the splitters above are accepted.
var preTokenizers = map[string]preInfo{
	"default": {split: defaultSplit, cleanSpaces: true},

	"gpt-2":           {split: gpt2Split, cleanSpaces: true},
	"phi-2":           {split: gpt2Split, cleanSpaces: true},
	"jina-es":         {split: gpt2Split, cleanSpaces: true},
	"jina-de":         {split: gpt2Split, cleanSpaces: true},
	"gigachat":        {split: gpt2Split, cleanSpaces: true},
	"jina-v2-es":      {split: gpt2Split, cleanSpaces: true},
	"jina-v2-de":      {split: gpt2Split, cleanSpaces: true},
	"a.x-4.0":         {split: gpt2Split, cleanSpaces: true},
	"mellum":          {split: gpt2Split, cleanSpaces: true},
	"mpt":             {split: gpt2Split, cleanSpaces: true},
	"olmo":            {split: gpt2Split, cleanSpaces: true},
	"jais":            {split: gpt2Split, cleanSpaces: true},
	"exaone4":         {split: gpt2Split, cleanSpaces: true},
	"trillion":        {split: gpt2Split},
	"granite-docling": {split: gpt2Split},

	"llama3":    {split: llama3Split, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"llama-v3":  {split: llama3Split, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"llama-bpe": {split: llama3Split, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"falcon3":   {split: llama3Split, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"falcon-h1": {split: llama3Split, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"pixtral":   {split: llama3Split, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"midm-2.0":  {split: llama3Split, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"lfm2":      {split: llama3Split, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"dbrx":      {split: llama3Split, cleanSpaces: true},
	"smaug-bpe": {split: llama3Split, cleanSpaces: true},

	"qwen2":            {split: qwen2Split},
	"deepseek-r1-qwen": {split: qwen2Split},
	"kormo":            {split: qwen2Split},
	"f2llmv2":          {split: qwen2Split},
	"hunyuan":          {split: qwen2Split},
	"solar-open":       {split: qwen2Split},
	"megrez":           {split: qwen2Split, cleanSpaces: true},
	"stablelm2":        {split: qwen2Split, cleanSpaces: true},
}

// at returns the code point at pos within [lo, hi), or -1 past the chunk.
func at(cpts []rune, lo, hi, pos int) rune {
	if pos >= lo && pos < hi {
		return cpts[pos]
	}
	return -1
}

func flagsAt(cpts []rune, lo, hi, pos int) cflags {
	if pos >= lo && pos < hi {
		return flagsOf(cpts[pos])
	}
	return 0
}

// splitGPT2 is 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (llama.cpp's unicode_regex_split_custom_gpt2).
func splitGPT2(cpts []rune, chunks []int, out []int) []int {
	start := 0
	for _, n := range chunks {
		lo, hi := start, start+n
		start = hi
		get := func(p int) rune { return at(cpts, lo, hi, p) }
		fl := func(p int) cflags { return flagsAt(cpts, lo, hi, p) }
		prev := lo
		add := func(end int) {
			if end > prev {
				out = append(out, end-prev)
			}
			prev = end
		}
		for pos := lo; pos < hi; {
			c, f := get(pos), fl(pos)
			if c == '\'' && pos+1 < hi {
				switch get(pos + 1) {
				case 's', 't', 'm', 'd':
					pos += 2
					add(pos)
					continue
				}
				if pos+2 < hi {
					c1, c2 := get(pos+1), get(pos+2)
					if c1 == 'r' && c2 == 'e' || c1 == 'v' && c2 == 'e' || c1 == 'l' && c2 == 'l' {
						pos += 3
						add(pos)
						continue
					}
				}
			}
			f2 := f
			if c == ' ' {
				f2 = fl(pos + 1)
			}
			if run := gpt2Class(f2); run != nil {
				if c == ' ' {
					pos++
				}
				for run(fl(pos)) {
					pos++
				}
				add(pos)
				continue
			}
			ws := 0
			for fl(pos+ws)&fSpace != 0 {
				ws++
			}
			switch {
			case ws > 1 && get(pos+ws) != -1: // \s+(?!\S): leave the last space to the next word
				pos += ws - 1
			case ws > 0:
				pos += ws
			default:
				pos++
			}
			add(pos)
		}
	}
	return out
}

func isLetterF(f cflags) bool { return f&fLetter != 0 }
func isNumberF(f cflags) bool { return f&fNumber != 0 }
func isOtherF(f cflags) bool  { return f&(fSpace|fLetter|fNumber) == 0 && f&fValid != 0 }

// gpt2Class picks the GPT-2 alternative (letters, digits, other) that f starts.
func gpt2Class(f cflags) func(cflags) bool {
	switch {
	case isLetterF(f):
		return isLetterF
	case isNumberF(f):
		return isNumberF
	case isOtherF(f):
		return isOtherF
	}
	return nil
}

// splitLlama3 is (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// with D = maxDigits: 3 for Llama 3 (llama.cpp's unicode_regex_split_custom_llama3),
// 1 for Qwen2 (the same regex with \p{N}, which llama.cpp runs through std::regex).
func splitLlama3(cpts []rune, chunks []int, out []int, maxDigits int) []int {
	start := 0
	for _, n := range chunks {
		lo, hi := start, start+n
		start = hi
		get := func(p int) rune { return at(cpts, lo, hi, p) }
		fl := func(p int) cflags { return flagsAt(cpts, lo, hi, p) }
		prev := lo
		add := func(end int) {
			if end > prev {
				out = append(out, end-prev)
			}
			prev = end
		}
		for pos := lo; pos < hi; {
			c, f := get(pos), fl(pos)
			if c == '\'' && pos+1 < hi {
				switch lowerASCII(get(pos + 1)) {
				case 's', 't', 'm', 'd':
					pos += 2
					add(pos)
					continue
				}
				if pos+2 < hi {
					c1, c2 := lowerASCII(get(pos+1)), lowerASCII(get(pos+2))
					if c1 == 'r' && c2 == 'e' || c1 == 'v' && c2 == 'e' || c1 == 'l' && c2 == 'l' {
						pos += 3
						add(pos)
						continue
					}
				}
			}
			// [^\r\n\p{L}\p{N}]?\p{L}+
			if c != '\r' && c != '\n' && !isNumberF(f) && (isLetterF(f) || isLetterF(fl(pos+1))) {
				pos++
				for isLetterF(fl(pos)) {
					pos++
				}
				add(pos)
				continue
			}
			// \p{N}{1,D}
			if isNumberF(f) {
				ini := pos
				for isNumberF(fl(pos)) {
					pos++
					if pos-ini >= maxDigits {
						add(pos)
						ini = pos
					}
				}
				add(pos)
				continue
			}
			// ' ?[^\s\p{L}\p{N}]+[\r\n]*' (llama.cpp tests the flags of pos, not pos+1, for being in range)
			f2 := f
			if c == ' ' {
				f2 = fl(pos + 1)
			}
			if f2&(fSpace|fLetter|fNumber) == 0 && f&fValid != 0 {
				if c == ' ' {
					pos++
				}
				for isOtherF(fl(pos)) {
					pos++
				}
				for c2 := get(pos); c2 == '\r' || c2 == '\n'; c2 = get(pos) {
					pos++
				}
				add(pos)
				continue
			}
			ws, lastNL := 0, 0
			for fl(pos+ws)&fSpace != 0 {
				if c2 := get(pos + ws); c2 == '\r' || c2 == '\n' {
					lastNL = pos + ws + 1
				}
				ws++
			}
			switch {
			case lastNL > 0: // \s*[\r\n]+
				pos = lastNL
			case ws > 1 && get(pos+ws) != -1: // \s+(?!\S)
				pos += ws - 1
			case ws > 0: // \s+
				pos += ws
			default:
				pos++
			}
			add(pos)
		}
	}
	return out
}

func lowerASCII(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// splitRuns splits each chunk into maximal runs of code points in class and
// the gaps between them, as a std::regex_iterator over "[class]+" does.
func splitRuns(cpts []rune, chunks []int, out []int, class func(rune) bool) []int {
	start := 0
	for _, n := range chunks {
		lo, hi := start, start+n
		start = hi
		for pos := lo; pos < hi; {
			in := class(cpts[pos])
			end := pos + 1
			for end < hi && class(cpts[end]) == in {
				end++
			}
			out = append(out, end-pos)
			pos = end
		}
	}
	return out
}

// splitPunctRuns is [\p{P}\$\+<=>\^~\|]+ as llama.cpp runs it: on ASCII that is
// every printable symbol but '`'.
func splitPunctRuns(cpts []rune, chunks []int, out []int) []int {
	return splitRuns(cpts, chunks, out, func(r rune) bool {
		if r < 128 {
			return r > ' ' && r < 0x7F && r != '`' && asciiFlags[r]&(fLetter|fNumber) == 0
		}
		return flagsOf(r)&fSpace == 0 && isPunct(r)
	})
}

// splitNumberRuns is \p{N}+.
func splitNumberRuns(cpts []rune, chunks []int, out []int) []int {
	return splitRuns(cpts, chunks, out, func(r rune) bool { return isNumberF(flagsOf(r)) })
}

// splitDigitTriples is [0-9][0-9][0-9]: leftmost non-overlapping triples of
// ASCII digits become words, the rest stays in gaps.
func splitDigitTriples(cpts []rune, chunks []int, out []int) []int {
	start := 0
	for _, n := range chunks {
		lo, hi := start, start+n
		start = hi
		prev := lo
		for pos := lo; pos+3 <= hi; {
			if isDigit(cpts[pos]) && isDigit(cpts[pos+1]) && isDigit(cpts[pos+2]) {
				if pos > prev {
					out = append(out, pos-prev)
				}
				out = append(out, 3)
				pos += 3
				prev = pos
				continue
			}
			pos++
		}
		if hi > prev {
			out = append(out, hi-prev)
		}
	}
	return out
}

func isDigit(r rune) bool { return '0' <= r && r <= '9' }
