package compact_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/memory"
)

// A tool-using agent loop: each reply and each tool result is appended as it comes, the model
// is sent the active context, a refusal of it as too long becomes an emergency compaction and a
// retry (Compactor.Retry), and a turn ends with a compaction when one is due. The limit here
// (3,000 tokens) is set above the model's real window (2,000): each time the context outgrows
// the window, the model refuses it and Retry compacts it to the window the refusal names.
func Example_toolLoop() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "memcascade")
	defer os.RemoveAll(dir)
	h, _ := db.OpenHandle(ctx, filepath.Join(dir, "agent.db"), db.Options{})
	defer h.Close()
	store, _ := memory.New(ctx, h, memory.Options{})
	defer store.Close()
	offline := cascade.New(h, cascade.Entry{Name: "offline", Type: "extractive", Provider: extractive.Summarizer{}})
	compactor := compact.New(store, offline, compact.Settings{TokenLimit: 3000})
	say := func(msgs ...chat.Message) { store.Append(ctx, "t", msgs, memory.AppendOptions{}) }
	say(chat.TextMessage(chat.RoleSystem, "You look up flights with flight_status."))
	retries := 0
	for turn := range 40 {
		say(chat.TextMessage(chat.RoleUser, fmt.Sprintf("Status of flight HAT%03d?", turn)))
		for {
			active, _ := store.Active(ctx, "t")
			reply, err := model(active.Messages()) // the agent's call to its model
			if retry, _, _ := compactor.Retry(ctx, "t", err); retry {
				retries++
				continue // compacted: send the smaller context again
			} else if err != nil {
				log.Fatal(err)
			}
			say(reply)
			for _, call := range reply.ToolCalls {
				say(chat.ToolResult(call.ID, flightStatus(call.Function.Arguments)))
			}
			if len(reply.ToolCalls) == 0 {
				break
			}
		}
		if due, _ := compactor.ShouldCompact(ctx, "t"); due {
			compactor.Compact(ctx, "t", compact.Options{})
		}
	}
	reps, _ := store.Reports(ctx, "t", 100)
	fmt.Println("compactions:", len(reps), "retries:", retries)
	// Output: compactions: 9 retries: 9
}

// model stands for the agent's model: a window of 2,000 tokens by its own rough count, a
// flight_status call for each question, then an answer from the tool's result.
func model(msgs []chat.Message) (chat.Message, error) {
	size := 0
	for _, m := range msgs {
		size += len(m.Text())/4 + len(m.ToolCalls)*20 + 4
	}
	if size > 2000 {
		return chat.Message{}, &openai.APIError{HTTPStatusCode: 400, Code: "context_length_exceeded",
			Message: fmt.Sprintf("This model's maximum context length is 2000 tokens. However, you requested %d tokens.", size)}
	}
	last := msgs[len(msgs)-1]
	if last.Role == chat.RoleTool {
		return chat.TextMessage(chat.RoleAssistant, "Here is what I found: "+last.Text()), nil
	}
	flight := strings.TrimSuffix(strings.TrimPrefix(last.Text(), "Status of flight "), "?")
	return chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_" + flight, Type: "function",
		Function: chat.FunctionCall{Name: "flight_status", Arguments: `{"flight":"` + flight + `"}`}}}}, nil
}

// flightStatus stands for the agent's tool.
func flightStatus(args string) string {
	return fmt.Sprintf("%s: on time, gate B%d, boarding 40 minutes before departure. %s", args, len(args), strings.Repeat("Baggage rules apply. ", 10))
}
