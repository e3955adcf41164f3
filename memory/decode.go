package memory

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/jsontext"
)

// An import reads each message once: decodeLine checks the syntax of a message's JSON, drops
// the white space outside its strings and finds its top-level fields in one pass over it, and
// the message is built from those fields. The bytes it returns are what the row stores: the
// message as the caller wrote it (its fields in their order, numbers and escapes as written),
// without encoding it again. Anything it does not take (a syntax error, a field of the wrong
// type, a key given twice) is decoded again by decodeMessage, as every message was before: its
// errors name the problem as they did, and its messages are stored as MarshalJSON writes them.

// maxDepth is how deeply arrays and objects may nest: encoding/json's limit, so that both
// decoders take the same inputs.
const maxDepth = 10000

// decodeLine decodes one message of an import: b is its JSON, with nothing else than white
// space around it. raw is the message's stored JSON, compact, or nil when it was decoded by
// decodeMessage (its row then stores its MarshalJSON). inPlace says b may be overwritten (it
// belongs to the caller and is not read again): raw is then b itself, made compact where
// needed.
func decodeLine(b []byte, inPlace bool) (m chat.Message, raw []byte, err error) {
	m, raw, ok := decodeFast(b, inPlace)
	if ok {
		return m, raw, nil
	}
	if raw != nil {
		b = raw // compacted in place: the same JSON value
	}
	m, err = decodeMessage(b)
	return m, nil, err
}

// field is a top-level field of a message, as offsets in the compact JSON.
type field struct {
	key, val   [2]int // [start, end) of the key (quotes included) and of the value
	keyEscaped bool   // the key holds a backslash escape
	valEscaped bool   // the value is a string that holds a backslash escape
	name       []byte // the key, unescaped
}

// decodeFast is decodeLine's one pass; ok is false when the message must be decoded by
// decodeMessage (bad syntax or invalid UTF-8, a value that is not an object, a field of the
// wrong type, a key given twice): raw is then nil, or the valid JSON of b, compacted in its
// place, which decodeMessage reads as it would read b.
func decodeFast(b []byte, inPlace bool) (m chat.Message, raw []byte, ok bool) {
	b = bytes.Trim(b, jsonSpace)
	if len(b) == 0 || b[0] != '{' || !utf8.Valid(b) {
		return chat.Message{}, nil, false
	}
	// In place, b is only read until it is known to be valid JSON: decodeMessage may need it
	// as it was. A value without white space to drop is stored as it is.
	s := compactor{src: b, write: !inPlace, fields: make([]field, 0, 8)}
	if !inPlace {
		s.dst = make([]byte, 0, len(b))
	}
	if !s.object(0) || s.i != len(b) {
		return chat.Message{}, nil, false
	}
	raw = b
	if !inPlace {
		raw = s.dst
	} else if s.spaced {
		s = compactor{src: b, dst: b[:0], write: true, inPlace: true, fields: s.fields[:0]}
		s.object(0) // valid JSON: it passes
		raw = s.dst
	}
	fields := s.fields
	if nameFields(raw, fields) {
		// A key given twice: encoding/json keeps the last, other readers may not; the message
		// is stored as decodeMessage reads it, each key once.
		return chat.Message{}, raw, false
	}
	for i := range fields {
		f := &fields[i]
		key := f.name
		v := json.RawMessage(raw[f.val[0]:f.val[1]:f.val[1]])
		switch string(key) {
		case "role":
			if !fastString(v, f.valEscaped, &m.Role) {
				return chat.Message{}, raw, false
			}
			continue
		case "content":
			if c := v[0]; c != '"' && c != '[' && !bytes.Equal(v, []byte("null")) {
				return chat.Message{}, raw, false
			}
			m.Content = v
			continue
		case "name", "tool_call_id":
			if jsontext.IsNullOrEmpty(v) {
				break // kept in Extra, written back as given
			}
			dst := &m.Name
			if string(key) == "tool_call_id" {
				dst = &m.ToolCallID
			}
			if !fastString(v, f.valEscaped, dst) {
				return chat.Message{}, raw, false
			}
			continue
		case "tool_calls":
			if bytes.Equal(v, []byte("null")) {
				break // kept in Extra, written back as given
			}
			if v[0] != '[' {
				return chat.Message{}, raw, false
			}
			if m.ToolCalls, ok = fastToolCalls(v); !ok {
				return chat.Message{}, raw, false
			}
			continue
		}
		if m.Extra == nil {
			m.Extra = map[string]json.RawMessage{}
		}
		m.Extra[string(key)] = v
	}
	return m, raw, true
}

// fastToolCalls reads tool_calls, a compact array, as json.Unmarshal into []ToolCall does, or
// returns false.
func fastToolCalls(v []byte) ([]chat.ToolCall, bool) {
	calls := []chat.ToolCall{}
	for _, e := range elements(v) {
		if v[e[0]] != '{' {
			return nil, false
		}
		var c chat.ToolCall
		var ok bool
		c.Extra, ok = fastObject(v[e[0]:e[1]], func(name, val []byte, escaped bool) (bool, bool) {
			switch string(name) {
			case "id":
				return true, fastString(val, escaped, &c.ID)
			case "type":
				if jsontext.IsNullOrEmpty(val) {
					return false, true
				}
				return true, fastString(val, escaped, &c.Type)
			case "function":
				if val[0] != '{' {
					return true, false
				}
				var ok bool
				c.Function.Extra, ok = fastObject(val, func(name, val []byte, escaped bool) (bool, bool) {
					switch string(name) {
					case "name":
						return true, fastString(val, escaped, &c.Function.Name)
					case "arguments":
						if jsontext.IsNullOrEmpty(val) {
							return false, true
						}
						return true, fastString(val, escaped, &c.Function.Arguments)
					}
					return false, true
				})
				return true, ok
			}
			return false, true
		})
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
	}
	return calls, true
}

// fastObject reads obj, a compact object, as decodeObject does: take decodes a field and says
// whether it took it (else it goes to the returned Extra) and whether it was well typed. An
// object that gives a key twice is refused.
func fastObject(obj []byte, take func(name, val []byte, escaped bool) (taken, ok bool)) (map[string]json.RawMessage, bool) {
	fields := members(obj)
	if nameFields(obj, fields) {
		return nil, false // a key given twice (see decodeFast)
	}
	var extra map[string]json.RawMessage
	for _, f := range fields {
		val := obj[f.val[0]:f.val[1]:f.val[1]]
		taken, ok := take(f.name, val, f.valEscaped)
		if !ok {
			return nil, false
		}
		if !taken {
			if extra == nil {
				extra = map[string]json.RawMessage{}
			}
			extra[string(f.name)] = val
		}
	}
	return extra, true
}

// members returns the fields of obj, a compact object already checked.
func members(obj []byte) []field {
	var out []field
	i := 1
	if obj[i] == '}' {
		return nil
	}
	for {
		var f field
		f.key[0] = i
		i, f.keyEscaped = skipString(obj, i)
		f.key[1] = i
		i++ // the colon
		f.val[0] = i
		if obj[i] == '"' {
			i, f.valEscaped = skipString(obj, i)
		} else {
			i = skipValue(obj, i)
		}
		f.val[1] = i
		out = append(out, f)
		if obj[i] == '}' {
			return out
		}
		i++ // the comma
	}
}

// elements returns the [start, end) of each element of arr, a compact array already checked.
func elements(arr []byte) [][2]int {
	var out [][2]int
	i := 1
	if arr[i] == ']' {
		return nil
	}
	for {
		end := skipValue(arr, i)
		out = append(out, [2]int{i, end})
		if arr[end] == ']' {
			return out
		}
		i = end + 1
	}
}

// skipString returns the end of the string at b[i] in checked JSON, and whether it holds an
// escape.
func skipString(b []byte, i int) (int, bool) {
	escaped := false
	i++
	for {
		for strPlain[b[i]] {
			i++
		}
		if b[i] == '"' {
			return i + 1, escaped
		}
		escaped = true
		i += 2 // the backslash and the escaped byte (the digits of \uXXXX are plain)
	}
}

// skipValue returns the end of the value at b[i] in compact, checked JSON.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		end, _ := skipString(b, i)
		return end
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i, _ = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
		i++
	}
	return i
}

// fastString decodes a JSON string value into dst as unmarshalString does: null leaves dst as it
// is, anything but a string is refused.
func fastString(v []byte, escaped bool, dst *string) bool {
	switch {
	case bytes.Equal(v, []byte("null")):
		return true
	case v[0] != '"':
		return false
	case !escaped:
		*dst = string(v[1 : len(v)-1])
		return true
	}
	s, ok := jsontext.StringValue(v)
	*dst = s
	return ok
}

// nameFields names each field (its key, unescaped) and reports whether a key is given twice.
func nameFields(raw []byte, fields []field) (repeated bool) {
	for i := range fields {
		f := &fields[i]
		f.name = raw[f.key[0]+1 : f.key[1]-1]
		if f.keyEscaped {
			k, _ := jsontext.StringValue(raw[f.key[0]:f.key[1]])
			f.name = []byte(k)
		}
	}
	if len(fields) <= 16 {
		for i := range fields {
			for j := i + 1; j < len(fields); j++ {
				if bytes.Equal(fields[i].name, fields[j].name) {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		if seen[string(f.name)] {
			return true
		}
		seen[string(f.name)] = true
	}
	return false
}

// compactor checks the syntax of a JSON value (RFC 8259, as encoding/json does) while it copies
// it to dst without the white space outside its strings, and records the fields of the
// outermost object. dst may share src's memory: it is never ahead of the reading.
type compactor struct {
	src, dst []byte
	write    bool // copy to dst; else only check, and give the fields' offsets in src
	inPlace  bool // dst is src's memory
	spaced   bool // there was white space outside strings
	i        int  // the next byte of src to read
	fields   []field
}

// pos is the offset of the next byte in the compact JSON.
func (s *compactor) pos() int {
	if s.write {
		return len(s.dst)
	}
	return s.i
}

// strPlain marks the bytes a JSON string holds as they are: all but the quote, the backslash
// and the control characters.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipPlain returns the index of the first byte of b from i that a string does not hold as it
// is (see strPlain), or len(b): eight bytes at a time, then one at a time.
func skipPlain(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		// A byte below 0x20, or one equal to '"' or '\\' (zero once xor'ed), sets its high bit.
		if ((x-ones*0x20)|(q-ones)|(bs-ones))&^x&highs != 0 {
			break
		}
	}
	for i < len(b) && strPlain[b[i]] {
		i++
	}
	return i
}

func (s *compactor) space() {
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
			s.spaced = true
		default:
			return
		}
	}
}

// emit copies src[from:s.i] to dst.
func (s *compactor) emit(from int) {
	if !s.write {
		return
	}
	if s.inPlace && len(s.dst) == from {
		// Nothing was dropped yet: the bytes are in place.
		s.dst = s.dst[:s.i]
		return
	}
	s.dst = append(s.dst, s.src[from:s.i]...) // in place, a move back (dst is never ahead)
}

func (s *compactor) value(depth int) bool {
	if s.i >= len(s.src) {
		return false
	}
	switch c := s.src[s.i]; {
	case c == '{':
		return s.object(depth)
	case c == '[':
		return s.array(depth)
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *compactor) literal(lit string) bool {
	if !bytes.HasPrefix(s.src[s.i:], []byte(lit)) {
		return false
	}
	from := s.i
	s.i += len(lit)
	s.emit(from)
	return true
}

func (s *compactor) number() bool {
	from, b := s.i, s.src
	i := s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	s.i = i
	s.emit(from)
	return true
}

// str reads a string; escaped says it holds a backslash escape.
func (s *compactor) str() (escaped, ok bool) {
	b, from := s.src, s.i
	i := s.i + 1
	for {
		i = skipPlain(b, i)
		if i >= len(b) {
			return false, false
		}
		switch b[i] {
		case '"':
			s.i = i + 1
			s.emit(from)
			return escaped, true
		case '\\':
			escaped = true
			if i+1 >= len(b) {
				return false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if jsontext.Hex4(b[i+2:]) < 0 {
					return false, false
				}
				i += 6
			default:
				return false, false
			}
		default: // a control character
			return false, false
		}
	}
}

func (s *compactor) array(depth int) bool {
	depth, empty, ok := s.open(']', depth)
	if !ok || empty {
		return ok
	}
	for {
		if !s.value(depth) {
			return false
		}
		if more, ok := s.next(']'); !more {
			return ok
		}
	}
}

// open reads the opening byte of an array or object that close ends, at depth, and the close
// at once when it is empty; ok is false when it is nested deeper than maxDepth.
func (s *compactor) open(close byte, depth int) (inner int, empty, ok bool) {
	if depth++; depth > maxDepth {
		return depth, false, false
	}
	from := s.i
	s.i++
	s.emit(from)
	s.space()
	if s.i < len(s.src) && s.src[s.i] == close {
		s.i++
		s.emit(s.i - 1)
		return depth, true, true
	}
	return depth, false, true
}

// next reads what follows a value of an array or object that close ends: a comma (more
// follows) or close (the end; ok); anything else is not JSON.
func (s *compactor) next(close byte) (more, ok bool) {
	s.space()
	if s.i >= len(s.src) {
		return false, false
	}
	switch s.src[s.i] {
	case ',':
		s.i++
		s.emit(s.i - 1)
		s.space()
		return true, true
	case close:
		s.i++
		s.emit(s.i - 1)
		return false, true
	}
	return false, false
}

// object reads an object; at depth 0 (the message itself) it records its fields.
func (s *compactor) object(depth int) bool {
	top := depth == 0
	depth, empty, ok := s.open('}', depth)
	if !ok || empty {
		return ok
	}
	for {
		if s.i >= len(s.src) || s.src[s.i] != '"' {
			return false
		}
		var f field
		f.key[0] = s.pos()
		esc, ok := s.str()
		if !ok {
			return false
		}
		f.key[1], f.keyEscaped = s.pos(), esc
		s.space()
		if s.i >= len(s.src) || s.src[s.i] != ':' {
			return false
		}
		s.i++
		s.emit(s.i - 1)
		s.space()
		f.val[0] = s.pos()
		if s.i < len(s.src) && s.src[s.i] == '"' {
			esc, ok := s.str()
			if !ok {
				return false
			}
			f.valEscaped = esc
		} else if !s.value(depth) {
			return false
		}
		f.val[1] = s.pos()
		if top {
			s.fields = append(s.fields, f)
		}
		if more, ok := s.next('}'); !more {
			return ok
		}
	}
}

// toolCallsColumn is toolCallsJSON (what json.Marshal writes of calls) without reflection, for
// calls decoded by fastToolCalls: their Extra values are compact JSON.
func toolCallsColumn(calls []chat.ToolCall) string {
	if len(calls) == 0 {
		return ""
	}
	n := 2
	for _, c := range calls {
		n += len(c.ID) + len(c.Type) + len(c.Function.Name) + len(c.Function.Arguments) + 64
		for k, v := range c.Extra {
			n += len(k) + len(v) + 4
		}
		for k, v := range c.Function.Extra {
			n += len(k) + len(v) + 4
		}
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, c := range calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jsontext.AppendString(b, c.ID)
		if c.Type != "" {
			b = append(b, `,"type":`...)
			b = jsontext.AppendString(b, c.Type)
		}
		b = append(b, `,"function":{"name":`...)
		b = jsontext.AppendString(b, c.Function.Name)
		if c.Function.Arguments != "" {
			b = append(b, `,"arguments":`...)
			b = jsontext.AppendString(b, c.Function.Arguments)
		}
		b = appendExtra(b, c.Function.Extra)
		b = append(b, '}')
		b = appendExtra(b, c.Extra)
		b = append(b, '}')
	}
	b = append(b, ']')
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// appendExtra appends the fields of extra in key order, as objectWriter.extra writes them and
// json.Marshal escapes them (the HTML characters <, > and &, and U+2028 and U+2029).
func appendExtra(b []byte, extra map[string]json.RawMessage) []byte {
	if len(extra) == 0 {
		return b
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = append(b, ',')
		b = jsontext.AppendString(b, k)
		b = append(b, ':')
		v := extra[k]
		if htmlEscaped(v) {
			var buf bytes.Buffer
			json.HTMLEscape(&buf, v)
			b = append(b, buf.Bytes()...)
		} else {
			b = append(b, v...)
		}
	}
	return b
}

// htmlEscaped reports whether json.Marshal escapes something of v: <, >, &, U+2028 or U+2029.
func htmlEscaped(v []byte) bool {
	return bytes.ContainsAny(v, "<>&") || bytes.Contains(v, []byte("\u2028")) || bytes.Contains(v, []byte("\u2029"))
}
