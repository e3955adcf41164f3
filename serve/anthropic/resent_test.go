package anthropic_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/serve/dialect/dialecttest"
)

// A request parsed against the previous one of its thread takes the messages of the elements
// it sends again with the same bytes from it, and reads the same turn as without it: the same
// messages, where each was given, and hashes.
func TestParseAgainstPrevious(t *testing.T) {
	sysAfter := func(b []byte) []byte { // the system member after the messages
		s := string(b)
		i, j := strings.Index(s, `"system":`), strings.Index(s, `"messages":`)
		sys := s[i:j]
		return []byte(s[:i] + strings.Replace(s[j:], `,"stream":true}`, ","+strings.TrimSuffix(sys, ",")+`,"stream":true}`, 1))
	}
	cases := []struct {
		name       string
		prev, next []byte
		same       int // messages of next that are prev's
	}{
		{"the next turn", longSession(3), longSession(4), 1 + 3*5},
		{"the same request", longSession(3), longSession(3), 1 + 3*5 + 1},
		{"a shorter one", longSession(4), longSession(2), 1 + 2*5},
		{"another system prompt", longSession(3), bytes.Replace(longSession(4), []byte("You are Claude Code."), []byte("You are terse."), 1), 0},
		{"the system prompt after the messages", sysAfter(longSession(3)), sysAfter(longSession(4)), 1 + 3*5},
		{"a system prompt gone", longSession(3), bytes.Replace(longSession(4), []byte(`"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],`), nil, 1), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev, got := dialecttest.ParseAgainst(t, d, c.prev, c.next, c.same)
			// Taken, not decoded again: the same memory (none when the system prompt differs).
			taken := c.same > 0 && &got.Messages[c.same-1].Content[0] == &prev.Messages[c.same-1].Content[0]
			if taken != (c.same > 0) {
				t.Errorf("messages taken from the previous request: %v, want %v", taken, c.same > 0)
			}
			// A third turn parsed against the second, itself parsed against the first.
			third := longSession(5)
			if bytes.Contains(c.next, []byte("You are terse.")) {
				third = bytes.Replace(third, []byte("You are Claude Code."), []byte("You are terse."), 1)
			}
			g3, err := d.Parse(third, got.Sent)
			if err != nil {
				t.Fatal(err)
			}
			w3, _ := d.Parse(third, nil)
			if !reflect.DeepEqual(g3.Messages, w3.Messages) || !reflect.DeepEqual(g3.Params, w3.Params) {
				t.Errorf("a third turn reads otherwise against the second")
			}
		})
	}
}
