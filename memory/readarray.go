package memory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/memcascade/memcascade/chat"
)

// streamArray reads an input that holds an array of messages, br standing at the array's '['
// ((object) the head {"messages": read already). It finds each element's end itself and
// decodes the element with decodeLine in its own copy, where json.Decoder would scan it twice
// before decodeLine reads it. Anything it does not take as it expects (an element that is not
// an object or that decodeLine refuses, a byte but a comma between elements, the end of the
// array) it hands with the rest of the input to decodeArray, whose json.Decoder goes on from
// that point as if it had read the input from its start: errors, and what follows the array,
// read exactly as they do there.
func streamArray(br *bufio.Reader, object bool, add func(chat.Message, []byte, int) error) error {
	br.Discard(1) // the '['
	// The decoder's state where streamArray leaves: after the '[', after an element, or
	// after the comma that follows it. An empty object stands for the elements read: a value
	// that ends with its last byte (a number would run on into what follows it).
	const atStart, afterElement, afterComma = "", "{}", "{},"
	n := 0
	state := atStart
	for {
		skipSpace(br)
		if c, err := br.Peek(1); err != nil || c[0] != '{' {
			return replayArray(state, br, n, object, add)
		}
		elem, closed := readElement(br)
		if !closed {
			return replayArray(state, io.MultiReader(bytes.NewReader(elem), br), n, object, add)
		}
		m, raw, err := decodeLine(elem, true)
		if err != nil {
			// decodeLine compacts elem in place only when it is valid JSON: the decoder reads
			// the same value, and words the error as it would have.
			return replayArray(state, io.MultiReader(bytes.NewReader(elem), br), n, object, add)
		}
		elem = nil
		if err := add(m, raw, 0); err != nil {
			return err
		}
		n++
		skipSpace(br)
		if c, err := br.Peek(1); err != nil || c[0] != ',' {
			return replayArray(afterElement, br, n, object, add) // ']' included: the decoder reads what follows
		}
		br.Discard(1)
		state = afterComma
	}
}

// replayArray goes on reading an array of messages with decodeArray from rest, n messages
// read, the decoder's state given by head (see streamArray).
func replayArray(head string, rest io.Reader, n int, object bool, add func(chat.Message, []byte, int) error) error {
	prefix := "["
	if object {
		prefix = `{"messages":[`
	}
	dec := json.NewDecoder(io.MultiReader(strings.NewReader(prefix+head), rest))
	return decodeArray(dec, object, n, head != "", add)
}

// messagesHead returns the length of the head {"messages": of an input that head starts, when
// the array follows it within head; else 0.
func messagesHead(head []byte) int {
	i := 0
	for _, want := range []string{"{", `"messages"`, ":", "["} {
		for i < len(head) && strings.IndexByte(jsonSpace, head[i]) >= 0 {
			i++
		}
		if !bytes.HasPrefix(head[i:], []byte(want)) {
			return 0
		}
		i += len(want)
	}
	return i - 1 // up to the '['
}

func skipSpace(br *bufio.Reader) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return
		}
		if strings.IndexByte(jsonSpace, c) < 0 {
			br.UnreadByte()
			return
		}
	}
}

// readElement reads from br the object that starts there, up to its closing brace, found by
// counting brackets outside strings (its syntax is checked later, by decodeLine). It returns
// what it read, and whether it found the end.
func readElement(br *bufio.Reader) ([]byte, bool) {
	// The pieces read, each a copy of a part of the reader's buffer, are joined once at the
	// end (as bufio.Reader.ReadBytes does): a message of N bytes is copied twice, where
	// growing one slice would allocate about 5N.
	var pieces [][]byte
	join := func() []byte {
		if len(pieces) == 1 {
			return pieces[0]
		}
		n := 0
		for _, p := range pieces {
			n += len(p)
		}
		elem := make([]byte, 0, n)
		for _, p := range pieces {
			elem = append(elem, p...)
		}
		return elem
	}
	depth, inString, escaped := 0, false, false
	for {
		if br.Buffered() == 0 {
			if _, err := br.Peek(1); err != nil {
				return join(), false
			}
		}
		buf, _ := br.Peek(br.Buffered())
		i, done := 0, false
	scan:
		for i < len(buf) {
			c := buf[i]
			switch {
			case escaped:
				escaped = false
			case inString:
				for i < len(buf) && buf[i] != '"' && buf[i] != '\\' {
					i++
				}
				if i == len(buf) {
					break scan
				}
				if buf[i] == '\\' {
					escaped = true
				} else {
					inString = false
				}
			case c == '"':
				inString = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth--; depth == 0 {
					i++
					done = true
					break scan
				}
			}
			i++
		}
		pieces = append(pieces, bytes.Clone(buf[:i]))
		br.Discard(i)
		if done {
			return join(), true
		}
	}
}
