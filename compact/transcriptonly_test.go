package compact_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// transcriptRecorder is a requestLog that says it reads only the conversation.
type transcriptRecorder struct{ *requestLog }

func (transcriptRecorder) ReadsTranscript() bool { return true }

var _ llm.TranscriptReader = transcriptRecorder{}

// TestTranscriptReaderSentNoMessages: a provider that reads only a request's conversation
// (llm.TranscriptReader, the offline rung) is sent its requests without the messages a model
// reads, the rendered middle among them, and writes the summary it writes with them: in one
// request, and in parts through a small window.
func TestTranscriptReaderSentNoMessages(t *testing.T) {
	ctx := context.Background()
	var msgs []chat.Message
	for i := range 60 {
		call := chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: fmt.Sprintf("call_%d", i), Type: "function",
			Function: chat.FunctionCall{Name: "get_order_details", Arguments: fmt.Sprintf(`{"order_id": "#W%07d"}`, i)}}}}
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("Please check order #W%07d for flight HAT%03d.", i, i)), call,
			chat.ToolResult(fmt.Sprintf("call_%d", i), fmt.Sprintf(`{"order_id": "#W%07d", "status": "delivered", "total": %d.50}`, i, 10+i)),
			chat.TextMessage("assistant", fmt.Sprintf("Order #W%07d was delivered; it cost $%d.50.", i, 10+i)))
	}
	for _, window := range []int{0, 2048} {
		run := func(p cascade.Provider) memory.Report {
			s, _ := storetest.Open(t)
			if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			e := fakeEntry("offline", p, window)
			e.MaxOutputTokens = 512
			a, _ := s.Active(ctx, "t")
			c := compact.New(s, cascade.New(s.DB(), e), compact.Settings{TokenLimit: a.Tokens * 2, TargetRatio: 0.05, SummaryMaxTokens: 1000})
			rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil || rep.Status != memory.StatusApplied || rep.Summary == nil {
				t.Fatalf("window %d: compact: %+v, %v", window, rep, err)
			}
			return rep
		}
		plain, reader := &requestLog{Completer: extractive.Summarizer{}}, transcriptRecorder{&requestLog{Completer: extractive.Summarizer{}}}
		want, got := run(plain), run(reader)
		if *got.Summary != *want.Summary || got.Chunks != want.Chunks {
			t.Fatalf("window %d: the summary without messages (%d requests) differs from the one with them (%d):\n%s\nwant:\n%s",
				window, got.Chunks, want.Chunks, *got.Summary, *want.Summary)
		}
		if window > 0 && len(reader.reqs) < 2 {
			t.Fatalf("window %d: %d request, want the middle in parts", window, len(reader.reqs))
		}
		for i, req := range reader.reqs {
			if req.Messages != nil || len(req.Transcript) == 0 && req.Running == "" {
				t.Fatalf("window %d: request %d: %d messages, %d of transcript, want none and some", window, i, len(req.Messages), len(req.Transcript))
			}
		}
		for i, req := range plain.reqs {
			if len(req.Messages) == 0 {
				t.Fatalf("window %d: request %d to a provider that reads messages has none", window, i)
			}
		}
	}
}
