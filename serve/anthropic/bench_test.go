package anthropic_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
)

// longSession is a Claude Code session of n tool rounds: each a user question, an assistant
// message with thinking and a call, a tool result of about 4 KB, and an answer; cache_control
// on the newest block.
func longSession(n int) []byte {
	var msgs []string
	result, _ := json.Marshal(strings.Repeat("ok  github.com/x/pkg/cache  0.213s  <coverage: 81.2% of statements>\n", 56))
	for i := range n {
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"Question %d: why does the build fail on port 8080?"}]}`, i),
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"thinking","thinking":"Run the tests of round %d.","signature":"EqQBCkYIBxgCKkBf0x+sig%d"},{"type":"text","text":"Running them."},{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"go test ./...","description":"Run the tests"}}]}`, i, i, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":%s},{"type":"text","text":"<system-reminder>Files may change.</system-reminder>"}]}`, i, result),
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"Round %d passes: the cache tests were flaky."}]}`, i))
	}
	msgs = append(msgs, `{"role":"user","content":[{"type":"text","text":"Next?","cache_control":{"type":"ephemeral"}}]}`)
	return []byte(`{"model":"claude-sonnet-4-5","max_tokens":32000,"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],"messages":[` + strings.Join(msgs, ",") + `],"stream":true}`)
}

// BenchmarkParse: a turn of a 100-round session (401 messages, 475 KB) read against the
// previous turn.
func BenchmarkParse(b *testing.B) {
	body := longSession(100)
	prev, err := d.Parse(body, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Parse(body, prev.Sent); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRender: the upstream body of that turn from a thread that stored it whole.
func BenchmarkRender(b *testing.B) {
	body := longSession(100)
	turn, err := d.Parse(body, nil)
	if err != nil {
		b.Fatal(err)
	}
	entries := make([]memory.Entry, len(turn.Messages))
	enc := make([]json.RawMessage, len(turn.Messages))
	for i, m := range turn.Messages {
		enc[i], _ = json.Marshal(m)
		var back chat.Message
		json.Unmarshal(enc[i], &back)
		entries[i] = memory.Entry{Seq: int64(i + 1), Message: back}
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Render(turn, entries, enc); err != nil {
			b.Fatal(err)
		}
	}
}
