package responses_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/serve/dialect/dialecttest"
)

// codexSession is a request of Codex's shape: instructions, then n rounds of a user message, an
// assistant run (reasoning, a function call), its output and the assistant's answer; more items
// after those.
func codexSession(instructions string, n int, more ...string) []byte {
	var items []string
	for i := range n {
		items = append(items,
			fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":"question %d"}]}`, i),
			fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[],"encrypted_content":"gAAA%d"}`, i, i),
			fmt.Sprintf(`{"type":"function_call","id":"fc_%d","call_id":"call_%d","name":"shell","arguments":"{\"command\":[\"ls\"]}"}`, i, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"call_%d","output":"file%d.go"}`, i, i),
			fmt.Sprintf(`{"type":"message","role":"assistant","id":"msg_%d","content":[{"type":"output_text","text":"round %d done","annotations":[]}]}`, i, i))
	}
	items = append(items, more...)
	return []byte(`{"model":"gpt-5","instructions":` + fmt.Sprintf("%q", instructions) + `,"input":[` + strings.Join(items, ",") + `],"stream":true}`)
}

// A request parsed against the previous one of its thread takes the messages of the items it
// sends again with the same bytes from it, a run of assistant items that may go on excepted,
// and reads the same turn as without it: the same messages, where each was given, and hashes.
func TestParseAgainstPrevious(t *testing.T) {
	const ins = "You are Codex."
	ask := `{"type":"message","role":"user","content":[{"type":"input_text","text":"next?"}]}`
	call := `{"type":"function_call","id":"fc_x","call_id":"call_x","name":"shell","arguments":"{}"}`
	out := `{"type":"function_call_output","call_id":"call_x","output":"ok"}`
	cases := []struct {
		name       string
		prev, next []byte
		same       int // messages of next that are the previous request's
		taken      int // of those, how many are taken (not read again); the last one's index + 1
	}{
		// 1 + 4 messages a round: the user's, the assistant's run, the output, the answer.
		{"the next turn", codexSession(ins, 3, ask), codexSession(ins, 4, ask), 1 + 3*4, 1 + 3*4},
		{"the same request", codexSession(ins, 3, ask), codexSession(ins, 3, ask), 1 + 3*4 + 1, 1 + 3*4},
		{"a run of assistant items that goes on", codexSession(ins, 3, ask), codexSession(ins, 3, ask, call, out), 1 + 3*4 + 1, 1 + 3*4},
		{"an answer that joins the run before it", codexSession(ins, 2, ask, call), codexSession(ins, 2, ask, call, `{"type":"message","role":"assistant","content":"and"}`, out), 1 + 2*4 + 1, 1 + 2*4},
		{"a shorter one", codexSession(ins, 4), codexSession(ins, 2, ask), 1 + 2*4, 1 + 2*4 - 1},
		{"other instructions", codexSession(ins, 3), codexSession("You are terse.", 4), 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev, got := dialecttest.ParseAgainst(t, d, c.prev, c.next, c.same)
			for i := 1; i < c.taken; i++ {
				if &got.Messages[i].Content[0] != &prev.Messages[i].Content[0] {
					t.Errorf("message %d read again, not taken from the previous request", i)
				}
			}
		})
	}
}
