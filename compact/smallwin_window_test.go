package compact_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// shortThread is n short exchanges of the given shape after a system prompt.
func shortThread(shape string, n int) []chat.Message {
	msgs := []chat.Message{chat.TextMessage("system", "You are a terse assistant.")}
	for i := range n {
		switch shape {
		case "ok": // one-word replies
			msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("Next %d?", i)), chat.TextMessage("assistant", "ok"))
		case "medium": // a sentence or two
			msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("Please note that order %d ships to warehouse W%03d on 2024-06-%02d, and tell me what else is due.", i, i%200, i%28+1)),
				chat.TextMessage("assistant", fmt.Sprintf("Noted: order %d goes to W%03d on 2024-06-%02d. Next due is order %d, about %d units, which still waits for its invoice.", i, i%200, i%28+1, i+1, 10+i%90)))
		case "tools": // short calls and results
			id := fmt.Sprintf("c%d", i)
			m := chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: id, Type: "function", Function: chat.FunctionCall{Name: "get_stock", Arguments: fmt.Sprintf(`{"item":"I%04d"}`, i)}}}}
			r := chat.TextMessage("tool", fmt.Sprintf(`{"item":"I%04d","left":%d}`, i, i%17))
			r.ToolCallID = id
			msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("Stock of I%04d?", i)), m, r, chat.TextMessage("assistant", fmt.Sprintf("%d left.", i%17)))
		default: // the stock questions of TestSmallWindowAnyThread
			msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("Is item %d in stock?", i)),
				chat.TextMessage("assistant", fmt.Sprintf("Yes, item %d: %d left.", i, i%17)))
		}
	}
	return msgs
}

// TestSmallWindowShortThreads: a summarizer with a 1,024-token window, one request at a time
// or three, compacts threads of short messages (a question and a one-line answer, a one-word
// reply, a short tool call and its result, or a sentence or two each) of 600 to 4,800 messages
// within 1.5 × ceil(middle / 512) + 2 requests, every request within the window. Each request after the first is packed to what
// the window leaves beside the summary so far as sent, not beside the answer's whole budget.
func TestSmallWindowShortThreads(t *testing.T) {
	t.Parallel()
	const window = 1024
	// One-word replies ("ok") and short tool calls ("tools") have message headers that outweigh
	// their text: with the short transcript header they take 45 requests for a 15,305-token
	// middle (bound 47) and 168 to 171 for 59,734 (bound 177), where the earlier
	// "=== #N role ===" header took 54 and 196.
	for _, shape := range []string{"stock", "medium", "ok", "tools"} {
		for _, n := range []int{300, 1200} {
			for _, conc := range []int{1, 3} {
				t.Run(fmt.Sprintf("%s/%d/c%d", shape, n, conc), func(t *testing.T) {
					t.Parallel()
					ctx := context.Background()
					s, _ := storetest.Open(t)
					if _, err := s.Append(ctx, "t", shortThread(shape, n), memory.AppendOptions{}); err != nil {
						t.Fatal(err)
					}
					w, _, mid, target := throughWindow(t, s, 2000, window, conc, nil)
					t.Logf("SHORTWIN %s/%d/c%d: middle %d tokens, %d requests (target %d), %d prompt tokens a request", shape, n, conc, mid, w.requests, target, w.prompt/max(w.requests, 1))
					if w.requests > target {
						t.Errorf("%d requests for a middle of %d tokens, over the target %d", w.requests, mid, target)
					}
				})
			}
		}
	}
}
