package compact

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
	"github.com/memcascade/memcascade/transcript"
)

// TestMiddleRenderedWhenSent: the blocks of a middle hold no rendered text while the
// summarizer works (a long middle renders to the size of its text again); a part's transcript,
// rendered when its request is written, is the transcript of its messages as they are
// rendered whole, trimmed to max_result_bytes, in one run or in several (a long part); and
// sizing the blocks counts the short and the trimmed ones as rendered.
func TestMiddleRenderedWhenSent(t *testing.T) {
	var middle []memory.Entry
	add := func(m chat.Message) {
		middle = append(middle, memory.Entry{Seq: int64(len(middle) + 1), Tokens: 7, Message: m})
	}
	for i := range 3 * renderParallelMin {
		add(chat.TextMessage("user", fmt.Sprintf("Please check order #W%07d.\n[#3 user]\n-> call x", i)))
		call := chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: fmt.Sprintf("call_%d", i), Type: "function",
			Function: chat.FunctionCall{Name: "get_order_details", Arguments: fmt.Sprintf(`{"order_id": "#W%07d"}`, i)}}}}
		add(call)
		result := fmt.Sprintf(`{"order_id": "#W%07d", "status": "delivered"}`, i)
		if i%50 == 0 {
			result += strings.Repeat(" and more", 300) // over max_result_bytes: trimmed
		}
		add(chat.ToolResult(fmt.Sprintf("call_%d", i), result))
	}
	const maxText = 400
	in := &input{c: &Compactor{}}
	in.render(middle, Settings{MaxResultBytes: maxText})
	for i, b := range in.blocks {
		if b.text != "" || !b.estimated {
			t.Fatalf("block %d holds %d bytes of text (estimated %v) before a request needs it", i, len(b.text), b.estimated)
		}
	}
	opt := transcript.Options{MaxTextBytes: maxText}
	n := len(middle)
	for _, p := range []part{{0, n}, {5, n - 3}, {10, 12}, {n - 1, n}} {
		if got, want := in.partText(in.blocks, p), transcript.Render(in.tms[p.from:p.to], opt); got != want {
			t.Fatalf("part %v: %d bytes, want the %d of its messages rendered", p, len(got), len(want))
		}
	}
	counter, err := tokencount.NewCounter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	in.counter = counter
	in.sizeBlocks()
	for i, b := range in.blocks {
		text := transcript.Render(in.tms[i:i+1], opt)
		want := middle[i].Tokens + blockHeaderTokens
		if rendered := len(in.tms[i].Text) + argsLen(in.tms[i].ToolCalls); len(text) < rendered || len(text) <= countedBlockBytes {
			want = counter.CountText(text) + 1
		}
		if b.tokens != want || b.estimated || b.text != "" {
			t.Fatalf("block %d sized %d tokens (estimated %v, %d bytes held), want %d", i, b.tokens, b.estimated, len(b.text), want)
		}
	}
}
