package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
	"github.com/memcascade/memcascade/transcript"
)

// Recall (Server.Recall) gives an agent that speaks only chat completions the memory_search
// tool of memctl mcp. To a request of a thread with compacted history the proxy adds the tool
// and asks the model without streaming. When the model's reply calls only that tool, the proxy
// runs the search, stores the call and its result in the thread as its own (their call ids
// start with RecallPrefix), and asks again, at most maxRecallRounds times. The answer that
// calls no recall goes to the agent as one ordinary answer (streamed as one event when the
// agent asked for a stream) and is stored. The agent never sees the recall turns: its next
// resend, which lacks them, is reconciled against the history without them.

// RecallPrefix starts the call id of every message the proxy stores for a recall.
const RecallPrefix = "memctl-recall-"

// RecallTool is the name of the function the proxy adds.
const RecallTool = "memory_search"

// maxRecallRounds bounds the searches of one turn; past it the model is asked without the tool.
const maxRecallRounds = 3

// recallHits bounds the hits of one search, and recallText the text of each hit given whole.
const (
	recallHits = 5
	recallText = 1500
)

var recallToolDef = chat.Tool{Type: "function", Function: chat.ToolFunction{
	Name: RecallTool,
	Description: "Search this conversation's earlier messages, including those a summary replaced, for every word of query " +
		"(a word ending in * is a prefix). Returns the matching messages newest first, with their seq, role and text. Use it " +
		"when you need an exact detail (an id, a number, what a tool returned) that the summary does not give.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"the words to find"}},"required":["query"]}`),
}}

// IsRecall reports whether m is a message the proxy stored for a recall.
func IsRecall(m chat.Message) bool {
	if m.Role == chat.RoleTool {
		return strings.HasPrefix(m.ToolCallID, RecallPrefix)
	}
	if m.Role != chat.RoleAssistant || len(m.ToolCalls) == 0 {
		return false
	}
	for _, c := range m.ToolCalls {
		if !strings.HasPrefix(c.ID, RecallPrefix) {
			return false
		}
	}
	return true
}

// withoutRecall returns history without the proxy's recall messages.
func withoutRecall(history []chat.Message) []chat.Message {
	if !slices.ContainsFunc(history, IsRecall) {
		return history
	}
	return slices.DeleteFunc(slices.Clone(history), IsRecall)
}

// recallFor returns the request with the recall tool added when recall applies to it: recall
// is on, the thread's active context holds a summary, and the agent has no tool of that name.
func (s *Server) recallFor(req dialect.Turn, a memory.Active) (dialect.Turn, bool) {
	if !s.Recall || a.Summary == 0 {
		return req, false
	}
	for _, t := range req.Tools {
		if t.Function.Name == RecallTool {
			return req, false
		}
	}
	r := req
	r.Tools = append(append([]chat.Tool(nil), req.Tools...), recallToolDef)
	r.Fields = make(map[string]json.RawMessage, len(req.Fields))
	for k, v := range req.Fields {
		r.Fields[k] = v
	}
	// The agent's tools as it sent them (fields chat.Tool does not model kept), then ours.
	var raws []json.RawMessage
	if raw, ok := req.Fields["tools"]; ok {
		json.Unmarshal(raw, &raws) // parseChatRequest read it as an array already
	}
	def, _ := json.Marshal(recallToolDef) // plain values always marshal
	r.Fields["tools"], _ = json.Marshal(append(raws, def))
	r.Fields["stream"] = json.RawMessage("false")
	delete(r.Fields, "stream_options")
	return r, true
}

// recall runs the recall rounds of a turn (see above). It answers the agent and returns true,
// or returns false, having written nothing, when the turn is to be relayed as usual (an
// upstream error, the rounds spent, the context no longer fitting).
func (s *Server) recall(w http.ResponseWriter, r *http.Request, thread string, req dialect.Turn) bool {
	ctx := r.Context()
	for round := 0; round < maxRecallRounds; round++ {
		counted := req // counted with the tool: it is sent with it
		counted.Tools = append(slices.Clone(req.Tools), recallToolDef)
		st := s.state(thread)
		lv, set, _, err := s.fit(ctx, st, counted, 0, w.Header())
		if err != nil {
			return false
		}
		rr, ok := s.recallFor(req, lv.active)
		if !ok {
			return false
		}
		rr.Notice = s.notice(ctx, st, lv, set)
		entries, enc, _ := modelView(lv.active.Entries, lv.enc)
		body, err := openAI.Render(rr, entries, enc)
		if err != nil {
			return false
		}
		b, ok := s.ask(ctx, body)
		if !ok {
			return false
		}
		replies, _, err := openAI.Reply(b)
		if err != nil {
			return false
		}
		reply := replies[0]
		if !callsOnlyRecall(reply) {
			s.answer(w, r, thread, req, b)
			return true
		}
		if err := s.runRecall(ctx, thread, reply); err != nil {
			s.Logger.Warn("recall failed", "thread", thread, "error", err.Error())
			return false
		}
	}
	return false
}

// ask sends body to the upstream, not streamed, and returns its answer when it is a 200.
func (s *Server) ask(ctx context.Context, body []byte) ([]byte, bool) {
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Upstream+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, false
	}
	up.Header.Set("Content-Type", "application/json")
	up.Header.Set("Accept", "application/json")
	if s.UpstreamKey != "" {
		up.Header.Set("Authorization", "Bearer "+s.UpstreamKey)
	}
	resp, err := s.Client.Do(up)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, s.MaxReplyBytes+1))
	if err != nil || resp.StatusCode != http.StatusOK || int64(len(b)) > s.MaxReplyBytes {
		return nil, false
	}
	return b, true
}

func callsOnlyRecall(m chat.Message) bool {
	if len(m.ToolCalls) == 0 {
		return false
	}
	for _, c := range m.ToolCalls {
		if c.Function.Name != RecallTool {
			return false
		}
	}
	return true
}

// runRecall runs the searches reply asks for and stores the call and the results in the
// thread, as the proxy's own.
func (s *Server) runRecall(ctx context.Context, thread string, reply chat.Message) error {
	call := reply
	call.ToolCalls = append([]chat.ToolCall(nil), reply.ToolCalls...)
	msgs := []chat.Message{call}
	for i, c := range call.ToolCalls {
		call.ToolCalls[i].ID = RecallPrefix + c.ID
		var args struct {
			Query string `json:"query"`
		}
		text := ""
		if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil || strings.TrimSpace(args.Query) == "" {
			text = `{"error": "want {\"query\": \"the words to find\"}"}`
		} else {
			text = s.recallResult(ctx, thread, args.Query)
		}
		res := chat.TextMessage(chat.RoleTool, text)
		res.ToolCallID = call.ToolCalls[i].ID
		msgs = append(msgs, res)
	}
	msgs[0] = call
	if _, err := s.storeReply(context.WithoutCancel(ctx), thread, msgs, dialect.Usage{}); err != nil {
		return err
	}
	s.Logger.Info("recall", "thread", thread, "searches", len(call.ToolCalls))
	return nil
}

// recallHit is one hit of a recall's result: the message's text given whole (up to
// recallText bytes) when the active context does not hold it.
type recallHit struct {
	memory.SearchHit
	Text string `json:"text,omitempty"`
}

// recallResult is the tool result of one search, redacted as for a provider.
func (s *Server) recallResult(ctx context.Context, thread, query string) string {
	redact := s.Compactor.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	hits, err := s.Store.Search(ctx, query, memory.SearchOptions{Thread: thread, Limit: recallHits, Redact: redact,
		RedactMessages: s.Compactor.ProviderView})
	if err != nil {
		return fmt.Sprintf(`{"error": %q}`, err.Error())
	}
	out := struct {
		Hits []recallHit `json:"hits"`
	}{Hits: []recallHit{}}
	for _, h := range hits {
		rh := recallHit{SearchHit: h}
		if !h.InActiveContext && h.CompactionID == 0 {
			if es, err := s.Store.Messages(ctx, thread, h.Seq, h.Seq, memory.ReadOptions{Light: true}); err == nil && len(es) == 1 {
				if vs, err := s.Compactor.ReadProviderView(ctx, thread, es); err == nil {
					text := vs[0].Text
					for _, c := range vs[0].ToolCalls {
						text += fmt.Sprintf("\n%s(%s)", c.Name, c.Arguments)
					}
					rh.Text = redact(transcript.Trim(text, recallText))
				}
			}
		}
		out.Hits = append(out.Hits, rh)
	}
	b, _ := json.Marshal(out) // plain values always marshal
	return string(b)
}

// answer gives the agent the upstream's final answer b (a chat completion) as the proxy gives
// any: stored, then passed on; as a stream of one event when the agent asked for a stream.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, thread string, req dialect.Turn, b []byte) {
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		s.relayJSON(w, r, openAI, thread, bytes.NewReader(b), func(dialect.Usage) {})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	s.relayStream(w, r, openAI, thread, bytes.NewReader(asStream(b)), func(dialect.Usage) {})
}

// asStream turns a chat completion into the server-sent events of the same answer: one chunk
// with the whole message as its delta and the finish reason, one with the usage, then [DONE].
func asStream(b []byte) []byte {
	var c struct {
		ID      string `json:"id"`
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []struct {
			Message      map[string]json.RawMessage `json:"message"`
			FinishReason json.RawMessage            `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	json.Unmarshal(b, &c) // replyMessage read it already
	var out bytes.Buffer
	event := func(v any) {
		e, _ := json.Marshal(v)
		fmt.Fprintf(&out, "data: %s\n\n", e)
	}
	for _, ch := range c.Choices[:1] {
		delta := map[string]any{}
		for k, v := range ch.Message {
			delta[k] = v
		}
		if raw, ok := ch.Message["tool_calls"]; ok {
			var calls []map[string]any
			if json.Unmarshal(raw, &calls) == nil {
				for i := range calls {
					calls[i]["index"] = i
				}
				delta["tool_calls"] = calls
			}
		}
		event(map[string]any{"id": c.ID, "object": "chat.completion.chunk", "created": c.Created, "model": c.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": ch.FinishReason}}})
	}
	if len(c.Usage) > 0 {
		event(map[string]any{"id": c.ID, "object": "chat.completion.chunk", "created": c.Created, "model": c.Model,
			"choices": []any{}, "usage": c.Usage})
	}
	out.WriteString("data: [DONE]\n\n")
	return out.Bytes()
}
