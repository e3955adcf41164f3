// Package jsontext holds the JSON text helpers that the message codec, the token counter, the
// import decoder and the facts ledger share: a string literal decoded or appended as
// encoding/json does it, in one copy, and checks for null, empty and compact values.
package jsontext

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// StringValue decodes a JSON string literal as encoding/json does (invalid UTF-8 and
// unpaired surrogates become U+FFFD), into one allocation of the result's size: a content of
// tens of megabytes is not decoded through a second buffer. ok is false when raw is not a
// valid JSON string.
func StringValue(raw []byte) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	plain := true
	for _, c := range body {
		if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(body), true
	}
	var sb strings.Builder
	sb.Grow(len(body))
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '"' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				sb.WriteRune(unicode.ReplacementChar)
			} else {
				sb.Write(body[i : i+size])
			}
			i += size
		case c != '\\':
			sb.WriteByte(c)
			i++
		default:
			if i+1 >= len(body) {
				return "", false
			}
			switch e := body[i+1]; e {
			case '"', '\\', '/':
				sb.WriteByte(e)
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				r := Hex4(body[i+2:])
				if r < 0 {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
						if d := utf16.DecodeRune(r, Hex4(body[i+2:])); d != unicode.ReplacementChar {
							sb.WriteRune(d)
							i += 6
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				sb.WriteRune(r)
				continue
			default:
				return "", false
			}
			i += 2
		}
	}
	return sb.String(), true
}

// Hex4 reads four hexadecimal digits, or returns -1.
func Hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// jsonSafe marks the ASCII bytes json.Marshal writes in a string as they are.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = !strings.ContainsRune("\"\\<>&", rune(c))
	}
	return t
}()

// AppendString appends s as json.Marshal writes it.
func AppendString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		if c := s[i]; c < utf8.RuneSelf {
			plain = jsonSafe[c]
		} else if c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9) {
			plain = false // U+2028 and U+2029 are escaped
		}
	}
	if !plain || !utf8.ValidString(s) {
		q, _ := json.Marshal(s) // json.Marshal knows its escapes, and replaces invalid UTF-8
		return append(b, q...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Compact returns v without insignificant white space: v itself when it is valid JSON and
// already compact (a large content is not copied again), else a compacted copy, or a plain copy
// when v is not valid JSON. The result must not be modified.
func Compact(v json.RawMessage) json.RawMessage {
	if IsCompact(v) && json.Valid(v) {
		return v
	}
	var buf bytes.Buffer
	buf.Grow(len(v))
	if err := json.Compact(&buf, v); err != nil {
		return slices.Clone(v)
	}
	return buf.Bytes()
}

// IsCompact reports whether b has no white space outside its strings.
func IsCompact(b []byte) bool {
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}

// IsNullOrEmpty reports whether a JSON value is null or the empty string (white space around
// it allowed). The message decoder reads a modelled string field holding it as "", and keeps
// the value in Extra so that it is written back as given.
func IsNullOrEmpty(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return bytes.Equal(v, []byte("null")) || bytes.Equal(v, []byte(`""`))
}
