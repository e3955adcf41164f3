package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// HF is an encoding read from a Hugging Face tokenizer.json of a byte-level BPE model (most
// models served locally ship one; Qwen 3's and Llama 3's are tested). It encodes as the reference
// implementation (the tokenizers library) encodes text without special tokens: the
// normalizer, then the pre-tokenizer, then the BPE model, with the merges in their order.
//
// What a file may hold (ParseHF refuses anything else, naming the component):
//
//   - model: type BPE with vocab and merges (each merge "a b" or ["a", "b"]), ignore_merges
//     (a piece that is itself a token is that token, as Llama 3 sets it), byte_fallback (a
//     byte-level vocabulary has every byte, so it never applies), no dropout, and no
//     continuing_subword_prefix or end_of_word_suffix other than "";
//   - normalizer: none, NFC, NFD, NFKC, NFKD, or a Sequence of these;
//   - pre_tokenizer: ByteLevel (with or without use_regex and add_prefix_space), or a Sequence
//     of Split pre-tokenizers (a Regex pattern, behavior Isolated, not inverted) ending with
//     ByteLevel;
//   - added_tokens are not looked for in the text: their text is encoded like any other text,
//     as Encoding and tiktoken's encode_ordinary treat special-token text. The decoder and the
//     post-processor are not used.
//
// The split patterns of Llama 3 (cl100k_base's), Qwen 3 (the same with single digits),
// o200k_base's and ByteLevel's own pattern (GPT-2's) are run by hand-written scanners, with the
// reference's Unicode tables (see hfunicode.go); any other Regex pattern is run by
// github.com/dlclark/regexp2, a backtracking engine like the reference's Oniguruma, with the
// unicode package's tables and its own case folding.
type HF struct {
	name    string
	forms   []normalizer // the normalizer: each form applied in turn
	stages  []hfStage
	model   *hfModel
	cache   *pieceCache
	classes *classTable
}

// hfStage is one step of the pre-tokenizer: it splits each piece of the previous step.
type hfStage struct {
	// scan returns the end of the piece starting at p < len(s) (a hand-written scanner), or
	// is nil when re splits.
	scan func(t *classTable, s string, p int) int
	re   *regexp2.Regexp
	// byteLevel marks the ByteLevel step, the last: prefixSpace prepends a space to a piece
	// that does not start with one, and scan (GPT-2's pattern) splits it if use_regex is set.
	byteLevel   bool
	prefixSpace bool
}

// IsHFJSON reports whether data looks like a tokenizer.json rather than a tiktoken-format
// vocabulary: its first byte other than white space (and a byte order mark) is '{', which no
// line of base64 starts with.
func IsHFJSON(data []byte) bool {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}

// hfModelFields are the model's fields other than its vocab and merges.
type hfModelFields struct {
	Type                    string   `json:"type"`
	Dropout                 *float64 `json:"dropout"`
	ContinuingSubwordPrefix *string  `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string  `json:"end_of_word_suffix"`
	IgnoreMerges            bool     `json:"ignore_merges"`
}

// ParseHF reads a tokenizer.json. name is what Name returns. Errors name the component of the
// file they are about (such as "pre_tokenizer.pretokenizers[1]").
func ParseHF(name string, data []byte) (*HF, error) {
	// The file is read by jsonReader rather than encoding/json, which would scan its megabytes
	// twice and allocate a string per token; the small components go to encoding/json.
	top, err := readObject(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), "")
	if err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %v", err)
	}
	rawModel, ok := top["model"]
	if !ok || isNull(rawModel) {
		return nil, errors.New("model: missing")
	}
	model, err := readObject(rawModel, "model.")
	if err != nil {
		return nil, err
	}
	var m hfModelFields
	fields := map[string]json.RawMessage{}
	for k, v := range model {
		if k != "vocab" && k != "merges" {
			fields[k] = v
		}
	}
	small, _ := json.Marshal(fields)
	if err := json.Unmarshal(small, &m); err != nil {
		return nil, fmt.Errorf("model: %v", err)
	}
	switch {
	case m.Type != "BPE":
		return nil, fmt.Errorf("model: type %q is not supported: only BPE models are", m.Type)
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, fmt.Errorf("model: dropout %v is not supported: it makes the tokens random", *m.Dropout)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "":
		return nil, fmt.Errorf("model: continuing_subword_prefix %q is not supported: a byte-level BPE has none", *m.ContinuingSubwordPrefix)
	case m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return nil, fmt.Errorf("model: end_of_word_suffix %q is not supported: a byte-level BPE has none", *m.EndOfWordSuffix)
	}
	f := struct{ Normalizer, PreTokenizer json.RawMessage }{top["normalizer"], top["pre_tokenizer"]}
	h := &HF{name: name, cache: newPieceCache(), classes: hfClasses()}
	if h.forms, err = parseNormalizer("normalizer", f.Normalizer); err != nil {
		return nil, err
	}
	if h.stages, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if last := h.stages[len(h.stages)-1]; last.scan == nil && !last.prefixSpace {
		// A ByteLevel step without its pattern or a prefix space only maps bytes to the
		// characters that stand for them, which this encoder has no need of.
		h.stages = h.stages[:len(h.stages)-1]
	}
	if h.model, err = parseBPE(model["vocab"], model["merges"], m.IgnoreMerges); err != nil {
		return nil, err
	}
	return h, nil
}

// parseNormalizer reads a normalizer: null, a Unicode normalization form, or a Sequence of
// them, and returns the forms to apply in turn.
func parseNormalizer(where string, raw json.RawMessage) ([]normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	switch n.Type {
	case "NFC":
		return []normalizer{newNormalizer(norm.NFC)}, nil
	case "NFD":
		return []normalizer{newNormalizer(norm.NFD)}, nil
	case "NFKC":
		return []normalizer{newNormalizer(norm.NFKC)}, nil
	case "NFKD":
		return []normalizer{newNormalizer(norm.NFKD)}, nil
	case "Sequence":
		var forms []normalizer
		for i, sub := range n.Normalizers {
			f, err := parseNormalizer(fmt.Sprintf("%s.normalizers[%d]", where, i), sub)
			if err != nil {
				return nil, err
			}
			forms = append(forms, f...)
		}
		return forms, nil
	}
	return nil, fmt.Errorf("%s: type %q is not supported: a byte-level BPE's normalizer may be none, NFC, NFD, NFKC, NFKD or a Sequence of these", where, n.Type)
}

// parsePreTokenizer reads the pre-tokenizer: ByteLevel, or a Sequence of Split steps ending
// with ByteLevel.
func parsePreTokenizer(raw json.RawMessage) ([]hfStage, error) {
	const where = "pre_tokenizer"
	if isNull(raw) {
		return nil, fmt.Errorf("%s: none: a byte-level BPE has a ByteLevel pre-tokenizer (a SentencePiece-style BPE such as Llama 2's is not supported)", where)
	}
	var p struct {
		Type          string            `json:"type"`
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	steps := []json.RawMessage{raw}
	names := []string{where}
	if p.Type == "Sequence" {
		steps = p.PreTokenizers
		names = make([]string, len(steps))
		for i := range steps {
			names[i] = fmt.Sprintf("%s.pretokenizers[%d]", where, i)
		}
	}
	var stages []hfStage
	for i, step := range steps {
		st, err := parseStep(names[i], step)
		if err != nil {
			return nil, err
		}
		if st.byteLevel != (i == len(steps)-1) {
			if st.byteLevel {
				return nil, fmt.Errorf("%s: ByteLevel must be the last pre-tokenizer", names[i])
			}
			return nil, fmt.Errorf("%s: the last pre-tokenizer must be ByteLevel: this is not a byte-level BPE", names[i])
		}
		stages = append(stages, st)
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("%s: an empty Sequence: a byte-level BPE has a ByteLevel pre-tokenizer", where)
	}
	return stages, nil
}

func parseStep(where string, raw json.RawMessage) (hfStage, error) {
	var s struct {
		Type           string `json:"type"`
		AddPrefixSpace bool   `json:"add_prefix_space"`
		UseRegex       *bool  `json:"use_regex"`
		Pattern        struct {
			Regex  *string `json:"Regex"`
			String *string `json:"String"`
		} `json:"pattern"`
		Behavior string `json:"behavior"`
		Invert   bool   `json:"invert"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return hfStage{}, fmt.Errorf("%s: %v", where, err)
	}
	switch s.Type {
	case "ByteLevel":
		st := hfStage{byteLevel: true, prefixSpace: s.AddPrefixSpace}
		if s.UseRegex == nil || *s.UseRegex {
			st.scan = (*classTable).splitGPT2
		}
		return st, nil
	case "Split":
		switch {
		case s.Pattern.Regex == nil:
			return hfStage{}, fmt.Errorf("%s: a Split without a Regex pattern is not supported", where)
		case s.Behavior != "Isolated":
			return hfStage{}, fmt.Errorf("%s: Split behavior %q is not supported: only Isolated is", where, s.Behavior)
		case s.Invert:
			return hfStage{}, fmt.Errorf("%s: an inverted Split is not supported", where)
		}
		if scan := knownPatterns[*s.Pattern.Regex]; scan != nil {
			return hfStage{scan: scan}, nil
		}
		re, err := regexp2.Compile(*s.Pattern.Regex, regexp2.None)
		if err != nil {
			return hfStage{}, fmt.Errorf("%s: pattern %q: %v", where, *s.Pattern.Regex, err)
		}
		return hfStage{re: re}, nil
	}
	return hfStage{}, fmt.Errorf("%s: type %q is not supported: a byte-level BPE's pre-tokenizer may be ByteLevel, or Split steps followed by ByteLevel", where, s.Type)
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// Name returns the encoding's name.
func (h *HF) Name() string { return h.name }

// Encode returns the tokens of s.
func (h *HF) Encode(s string) []int {
	out, _ := h.run(s, make([]int, 0, len(s)/4+4), false)
	return out
}

// Count returns len(Encode(s)) without building the slice.
func (h *HF) Count(s string) int {
	_, n := h.run(s, nil, true)
	return n
}

func (h *HF) run(s string, out []int, count bool) ([]int, int) {
	if s == "" {
		return out, 0
	}
	if !utf8.ValidString(s) {
		// Text reaches the reference as Unicode: each invalid byte is read as U+FFFD.
		s = string([]rune(s))
	}
	for _, f := range h.forms {
		s = f.String(s)
	}
	n := 0
	var scratch [maxLinear]uint32
	h.pieces(s, func(piece string) {
		if len(piece) > maxPiece {
			// Merged part by part, as the fast encoder merges a long piece (see maxPiece).
			for c := range chunks(piece) {
				part := h.piece(c, nil) // may be the cache's: read only
				n += len(part)
				if !count {
					for _, t := range part {
						out = append(out, int(t))
					}
				}
			}
			return
		}
		toks := h.piece(piece, scratch[:0])
		n += len(toks)
		if !count {
			for _, t := range toks {
				out = append(out, int(t))
			}
		}
	})
	return out, n
}

// pieces passes the pieces the pre-tokenizer cuts s into to emit.
func (h *HF) pieces(s string, emit func(string)) {
	if len(h.stages) == 0 {
		emit(s)
		return
	}
	h.split(s, 0, emit)
}

// split passes the pieces stage i and the later stages cut s into to emit.
func (h *HF) split(s string, i int, emit func(string)) {
	st := &h.stages[i]
	if st.byteLevel && st.prefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	last := i == len(h.stages)-1
	next := func(piece string) {
		if last {
			emit(piece)
		} else {
			h.split(piece, i+1, emit)
		}
	}
	switch {
	case st.scan != nil:
		for p := 0; p < len(s); {
			q := st.scan(h.classes, s, p)
			next(s[p:q])
			p = q
		}
	case st.re != nil:
		splitRegexp(st.re, s, next)
	default:
		next(s)
	}
}

// splitRegexp passes the matches of re in s and the text between them, in order, to emit
// (Split's Isolated behavior).
func splitRegexp(re *regexp2.Regexp, s string, emit func(string)) {
	runes := []rune(s)
	// offsets[i] is the byte offset of runes[i] in s.
	offsets := make([]int, len(runes)+1)
	o := 0
	for i, r := range runes {
		offsets[i] = o
		o += utf8.RuneLen(r)
	}
	offsets[len(runes)] = o
	prev := 0
	m, _ := re.FindRunesMatch(runes)
	for m != nil {
		start, end := offsets[m.Index], offsets[m.Index+m.Length]
		if start > prev {
			emit(s[prev:start])
		}
		if end > start {
			emit(s[start:end])
		}
		prev = end
		m, _ = re.FindNextMatch(m)
	}
	if prev < len(s) {
		emit(s[prev:])
	}
}

// piece returns the tokens of one piece, appended to out (which it may return as is when the
// tokens are cached: the caller must not modify them).
func (h *HF) piece(piece string, out []uint32) []uint32 {
	md := h.model
	switch len(piece) {
	case 0:
		return out
	case 1:
		return append(out, md.ranks.single[piece[0]])
	}
	if len(piece) == 2 {
		if md.ignoreMerges {
			if r := md.ranks.pairs[int(piece[0])<<8|int(piece[1])]; r != noRank {
				return append(out, r)
			}
		}
		a, b := md.ranks.single[piece[0]], md.ranks.single[piece[1]]
		if _, id, ok := md.merges.get(a, b); ok {
			return append(out, id)
		}
		return append(out, a, b)
	}
	hash, head := hashKey(piece)
	if r, ok := md.ranks.lookup(piece, hash, head); ok {
		// A piece that is a token is that token with ignore_merges; without, it is whatever
		// the merges make of it, which is nearly always the token itself: that is found once
		// per token and remembered.
		if md.ignoreMerges {
			return append(out, r)
		}
		switch atomic.LoadUint32(&md.self[r]) {
		case selfYes:
			return append(out, r)
		case selfUnknown:
			if len(piece) <= maxLinear {
				start := len(out)
				out = md.mergeLinear(piece, out)
				if len(out) == start+1 && out[start] == r {
					atomic.StoreUint32(&md.self[r], selfYes)
				} else {
					atomic.StoreUint32(&md.self[r], selfNo)
				}
				return out
			}
		}
	}
	if cached, ok := h.cache.get(piece, hash); ok {
		return cached
	}
	if len(piece) > maxLinear {
		return md.mergeHeap(piece, out)
	}
	out = md.mergeLinear(piece, out)
	h.cache.put(piece, hash, out)
	return out
}
