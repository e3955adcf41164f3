package dialect

import (
	"encoding/json"
	"fmt"
)

// A request is read in one pass over its body: the scanner below checks that the body is one
// JSON object and records where each of its members is, and where each element of its
// conversation array is (messages, or input), without decoding them. Only the values the
// proxy reads (the model, stream, tools, and the messages it has not seen yet) are decoded
// after that.

// Member is a member of the request's object: its key, decoded, and its value as sent.
type Member struct {
	Key string
	Val []byte
}

// maxJSONDepth bounds the nesting of a request's values, as encoding/json does.
const maxJSONDepth = 10000

// jsonError is a body that is not valid JSON, with the offset where it stops being so.
type jsonError struct {
	off int
	msg string
}

func (e *jsonError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

// ScanObject checks that body is one JSON object and returns its members in order (a key that
// comes again replaces the earlier value in place, as encoding/json keeps the last) and, when
// the member arrayKey is an array, its elements.
func ScanObject(body []byte, arrayKey string) (members []Member, elems [][]byte, err error) {
	s := scanner{b: body}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil, nil, s.fail("want a JSON object")
	}
	s.i++
	s.space()
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			s.space()
			start := s.i
			if s.peek() != '"' {
				return nil, nil, s.fail("want a member name")
			}
			escaped, err := s.str()
			if err != nil {
				return nil, nil, err
			}
			key := string(s.b[start+1 : s.i-1])
			if escaped {
				if json.Unmarshal(s.b[start:s.i], &key) != nil {
					return nil, nil, s.fail("bad member name")
				}
			}
			s.space()
			if s.peek() != ':' {
				return nil, nil, s.fail("want ':'")
			}
			s.i++
			s.space()
			vstart := s.i
			var arr [][]byte
			if key == arrayKey && s.peek() == '[' {
				arr, err = s.array(1, true)
			} else {
				err = s.value(1)
			}
			if err != nil {
				return nil, nil, err
			}
			m := Member{Key: key, Val: s.b[vstart:s.i]}
			replaced := false
			for j := range members {
				if members[j].Key == key {
					members[j], replaced = m, true
				}
			}
			if !replaced {
				members = append(members, m)
			}
			if key == arrayKey {
				elems = arr
			}
			s.space()
			if s.peek() == ',' {
				s.i++
				continue
			}
			if s.peek() == '}' {
				s.i++
				break
			}
			return nil, nil, s.fail("want ',' or '}'")
		}
	}
	s.space()
	if s.i != len(s.b) {
		return nil, nil, s.fail("data after the object")
	}
	return members, elems, nil
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) fail(msg string) error {
	if s.i >= len(s.b) {
		return &jsonError{off: s.i, msg: "unexpected end of JSON (" + msg + ")"}
	}
	return &jsonError{off: s.i, msg: msg}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value checks one value at s.i, nested depth deep.
func (s *scanner) value(depth int) error {
	if depth > maxJSONDepth {
		return s.fail("JSON nested too deep")
	}
	switch c := s.peek(); {
	case c == '"':
		_, err := s.str()
		return err
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		_, err := s.array(depth+1, false)
		return err
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.word("true")
	case c == 'f':
		return s.word("false")
	case c == 'n':
		return s.word("null")
	}
	return s.fail("want a JSON value")
}

func (s *scanner) object(depth int) error {
	s.i++ // {
	s.space()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.space()
		if s.peek() != '"' {
			return s.fail("want a member name")
		}
		if _, err := s.str(); err != nil {
			return err
		}
		s.space()
		if s.peek() != ':' {
			return s.fail("want ':'")
		}
		s.i++
		s.space()
		if err := s.value(depth); err != nil {
			return err
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.fail("want ',' or '}'")
		}
	}
}

// array checks an array; with keep, it returns its elements.
func (s *scanner) array(depth int, keep bool) ([][]byte, error) {
	s.i++ // [
	var elems [][]byte
	s.space()
	if s.peek() == ']' {
		s.i++
		return elems, nil
	}
	for {
		s.space()
		start := s.i
		if err := s.value(depth); err != nil {
			return nil, err
		}
		if keep {
			elems = append(elems, s.b[start:s.i])
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return elems, nil
		default:
			return nil, s.fail("want ',' or ']'")
		}
	}
}

// str checks a string (the body is valid UTF-8: the caller checked) and reports whether it
// holds an escape.
func (s *scanner) str() (escaped bool, err error) {
	s.i++ // "
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return escaped, nil
		case c == '\\':
			escaped = true
			s.i++
			switch s.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				s.i++
				for k := 0; k < 4; k++ {
					if !isHex(s.peek()) {
						return false, s.fail("bad \\u escape in a string")
					}
					s.i++
				}
			default:
				return false, s.fail("bad escape in a string")
			}
		case c < 0x20:
			return false, s.fail("control character in a string")
		default:
			s.i++
		}
	}
	return false, s.fail("unterminated string")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

func (s *scanner) number() error {
	if s.peek() == '-' {
		s.i++
	}
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return s.fail("bad number")
	}
	if s.peek() == '.' {
		s.i++
		if s.digits() == 0 {
			return s.fail("bad number")
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if s.digits() == 0 {
			return s.fail("bad number")
		}
	}
	return nil
}

func (s *scanner) word(w string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return s.fail("want a JSON value")
	}
	s.i += len(w)
	return nil
}
