package facts

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// jsonObject is a JSON object with its keys in document order.
type jsonObject []jsonKV

type jsonKV struct {
	key string
	val any
}

// maxJSONDepth bounds nesting; a deeper document is read as text.
const maxJSONDepth = 64

// parseJSONDoc parses s when it is a JSON object or array (and nothing else), keeping the
// order of keys. Values are jsonObject, []any, string, json.Number, bool or nil.
func parseJSONDoc(s string) (any, bool) {
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return nil, false
	}
	p := &jsonParser{s: t}
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.i == len(p.s)
}

// jsonParser is a small JSON reader: encoding/json cannot keep the order of object keys,
// and its token API is slow.
type jsonParser struct {
	s string
	i int
}

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, bool) {
	if depth > maxJSONDepth {
		return nil, false
	}
	p.space()
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; c {
	case '{':
		p.i++
		obj := jsonObject{}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return obj, true
		}
		for {
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return nil, false
			}
			key, ok := p.str()
			if !ok {
				return nil, false
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, false
			}
			p.i++
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			obj = append(obj, jsonKV{key, v})
			if more, ok := p.next('}'); !more {
				return obj, ok
			}
		}
	case '[':
		p.i++
		arr := []any{}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return arr, true
		}
		for {
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			arr = append(arr, v)
			if more, ok := p.next(']'); !more {
				return arr, ok
			}
		}
	case '"':
		return p.str()
	case 't':
		return true, p.lit("true")
	case 'f':
		return false, p.lit("false")
	case 'n':
		return nil, p.lit("null")
	}
	return p.number()
}

// next consumes ',' (another element follows: more) or the closing byte (the end: ok).
func (p *jsonParser) next(closing byte) (more, ok bool) {
	p.space()
	if p.i >= len(p.s) {
		return false, false
	}
	c := p.s[p.i]
	p.i++
	return c == ',', c == closing
}

func (p *jsonParser) lit(word string) bool {
	if strings.HasPrefix(p.s[p.i:], word) {
		p.i += len(word)
		return true
	}
	return false
}

// str reads a string at p.i (a '"'); encoding/json decodes it only when it has escapes or
// invalid UTF-8.
func (p *jsonParser) str() (string, bool) {
	start := p.i
	p.i++
	escaped := false
	for {
		if p.i >= len(p.s) {
			return "", false
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			raw := p.s[start:p.i]
			if !escaped && utf8.ValidString(raw) {
				return raw[1 : len(raw)-1], true
			}
			var out string
			if err := json.Unmarshal([]byte(raw), &out); err != nil {
				return "", false
			}
			return out, true
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			return "", false
		default:
			p.i++
		}
	}
}

// number reads -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?.
func (p *jsonParser) number() (any, bool) {
	start := p.i
	digits := func() bool {
		n := p.i
		for p.i < len(p.s) && isDigit(p.s[p.i]) {
			p.i++
		}
		return p.i > n
	}
	if p.i < len(p.s) && p.s[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if !digits() {
		return nil, false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if !digits() {
			return nil, false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if !digits() {
			return nil, false
		}
	}
	return json.Number(p.s[start:p.i]), true
}
