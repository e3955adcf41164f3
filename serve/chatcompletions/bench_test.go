package chatcompletions_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/serve/chatcompletions"
	"github.com/memcascade/memcascade/serve/dialect"
)

// conversation is a request body of n messages, and the same with two more (the next turn).
func conversation(n int) (prev, next []byte) {
	msgs := []chat.Message{chat.TextMessage("system", "You are a coding agent.")}
	for i := 1; len(msgs) < n; i++ {
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("Step %d: run the tests in package %d and tell me what failed. %s", i, i, strings.Repeat("context ", 20))),
			chat.TextMessage("assistant", fmt.Sprintf("Step %d: 3 tests failed in package %d; the fix is in handler.go line %d.", i, i, 40+i)))
	}
	msgs = msgs[:n]
	prev, _ = json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs, "stream": false})
	msgs = append(msgs, chat.TextMessage("assistant", "done"), chat.TextMessage("user", "and now?"))
	next, _ = json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs, "stream": false})
	return prev, next
}

// BenchmarkParseTurn: the parse of a turn's request that resends a thread of n messages plus
// two new ones, the previous request's parse at hand (as serve keeps it), side by side with
// its floor: copying the same bytes (io.Copy), which the server does to read the body anyway.
//
//	go test ./serve/chatcompletions -run '^$' -bench ParseTurn -benchmem
func BenchmarkParseTurn(b *testing.B) {
	for _, n := range []int{200, 10000, 50000} {
		prevBody, body := conversation(n)
		d := chatcompletions.Dialect{}
		prev, err := d.Parse(prevBody, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("parse/%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := d.Parse(body, prev.Sent); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("copy/%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				io.Copy(&buf, bytes.NewReader(body))
			}
		})
	}
}

var _ = dialect.Sent{}
