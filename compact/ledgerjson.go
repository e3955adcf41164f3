package compact

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/jsontext"
)

// decodeLedger decodes a stored ledger: the JSON storedLedger writes (json.Marshal of
// []facts.Fact), read by hand, since encoding/json's reflection was most of reading back the
// ledger of a long thread. Anything of another shape (a key it does not know, a string with an
// escape it leaves to encoding/json, white space, a null) is decoded by encoding/json instead,
// so the result is always what json.Unmarshal gives.
func decodeLedger(data []byte) ([]facts.Fact, error) {
	if fs, ok := scanLedger(data); ok {
		return fs, nil
	}
	var fs []facts.Fact
	err := json.Unmarshal(data, &fs)
	return fs, err
}

// scanLedger reads data as json.Marshal writes a []facts.Fact; false when it is not exactly so.
func scanLedger(data []byte) ([]facts.Fact, bool) {
	if bytes.Equal(data, []byte("null")) {
		return nil, true
	}
	if len(data) < 2 || data[0] != '[' || data[len(data)-1] != ']' {
		return nil, false
	}
	p := &ledgerScanner{b: data[1 : len(data)-1]}
	fs := make([]facts.Fact, 0, bytes.Count(data, []byte(`{"kind":`)))
	for len(p.b) > 0 {
		if len(fs) > 0 && !p.lit(",") {
			return nil, false
		}
		f, ok := p.fact()
		if !ok {
			return nil, false
		}
		fs = append(fs, f)
	}
	return fs, true
}

type ledgerScanner struct{ b []byte }

func (p *ledgerScanner) lit(s string) bool {
	if !bytes.HasPrefix(p.b, []byte(s)) {
		return false
	}
	p.b = p.b[len(s):]
	return true
}

// fact reads one object, its keys in the order of facts.Fact's fields.
func (p *ledgerScanner) fact() (facts.Fact, bool) {
	var f facts.Fact
	var kind, text string
	ok := p.lit(`{"kind":`) && p.str(&kind) && p.lit(`,"text":`) && p.str(&text) &&
		p.lit(`,"weight":`) && p.int(&f.Weight) && p.lit(`,"seq":`) && p.int(&f.Seq)
	if !ok {
		return f, false
	}
	f.Kind, f.Text = facts.Kind(kind), text
	if p.lit(`,"entity":`) && !p.str(&f.Entity) {
		return f, false
	}
	if p.lit(`,"outcome":`) && !p.str(&f.Outcome) {
		return f, false
	}
	if p.lit(`,"dropped":`) {
		if !p.lit("true") {
			return f, false
		}
		f.Dropped = true
	}
	return f, p.lit("}")
}

// str reads a string without escapes (one with a backslash is left to encoding/json) and
// without control characters or invalid UTF-8 (which json.Marshal never writes raw).
func (p *ledgerScanner) str(out *string) bool {
	if len(p.b) == 0 || p.b[0] != '"' {
		return false
	}
	end := bytes.IndexByte(p.b[1:], '"')
	if end < 0 {
		return false
	}
	s := p.b[1 : 1+end]
	if bytes.IndexByte(s, '\\') >= 0 {
		return false
	}
	ascii := true
	for _, c := range s {
		if c < 0x20 {
			return false // a control character: json.Marshal escapes them
		}
		ascii = ascii && c < 0x80
	}
	if !ascii && !utf8.Valid(s) {
		return false // encoding/json replaces what is not UTF-8
	}
	*out = string(s)
	p.b = p.b[1+end+1:]
	return true
}

// int reads an integer as json.Marshal writes an int.
func (p *ledgerScanner) int(out *int) bool {
	n := 0
	for n < len(p.b) && (p.b[n] == '-' || p.b[n] >= '0' && p.b[n] <= '9') {
		n++
	}
	v, err := strconv.ParseInt(string(p.b[:n]), 10, strconv.IntSize)
	if err != nil || n > 1 && p.b[0] == '0' || n > 2 && p.b[0] == '-' && p.b[1] == '0' {
		return false
	}
	*out = int(v)
	p.b = p.b[n:]
	return true
}

// encodeLedger is json.Marshal(fs), byte for byte (see jsontext.AppendString), without
// reflection.
func encodeLedger(fs []facts.Fact) []byte {
	if fs == nil {
		return []byte("null")
	}
	n := 2
	for i := range fs {
		n += len(fs[i].Kind) + len(fs[i].Text) + len(fs[i].Entity) + len(fs[i].Outcome) + 96
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i := range fs {
		f := &fs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"kind":`...)
		b = jsontext.AppendString(b, string(f.Kind))
		b = append(b, `,"text":`...)
		b = jsontext.AppendString(b, f.Text)
		b = append(b, `,"weight":`...)
		b = strconv.AppendInt(b, int64(f.Weight), 10)
		b = append(b, `,"seq":`...)
		b = strconv.AppendInt(b, int64(f.Seq), 10)
		if f.Entity != "" {
			b = append(b, `,"entity":`...)
			b = jsontext.AppendString(b, f.Entity)
		}
		if f.Outcome != "" {
			b = append(b, `,"outcome":`...)
			b = jsontext.AppendString(b, f.Outcome)
		}
		if f.Dropped {
			b = append(b, `,"dropped":true`...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}
