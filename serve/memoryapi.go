package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/mcpserver"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/transcript"
)

// The memory routes: what the MCP tools do (package mcpserver), over the inspection API.
// They answer with the tools' JSON shapes.

// memoryRoutes registers the memory routes.
func (s *Server) memoryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/search", s.apiSearch)
	mux.HandleFunc("GET /api/threads/{id}/messages", s.apiMessages)
	mux.HandleFunc("POST /api/threads/{id}/pins/{seq}", s.apiPin)
	mux.HandleFunc("DELETE /api/threads/{id}/pins/{seq}", s.apiPin)
}

// intParam reads a whole-number query or path value of at least min; def when absent (a
// path value is never absent). It writes a 400 naming the parameter when it is not one.
func intParam(w http.ResponseWriter, name, v string, def, min int64) (int64, bool) {
	if v == "" {
		return def, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min {
		writeCode(w, memory.CodeInvalid, "invalid_"+name,
			fmt.Sprintf("%s %q: want a whole number from %d", name, v, min), name)
		return 0, false
	}
	return n, true
}

// GET /api/search?q=QUERY[&thread=T][&limit=N]: the hits of memory.Store.Search (memctl
// search's and memory_search's), redacted as for a provider.
func (s *Server) apiSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("q") == "" {
		writeCode(w, memory.CodeInvalid, "invalid_q", "q: the words to search for are required", "q")
		return
	}
	limit, ok := intParam(w, "limit", q.Get("limit"), 0, 1)
	if !ok {
		return
	}
	hits, err := s.Store.Search(r.Context(), q.Get("q"), memory.SearchOptions{Thread: q.Get("thread"), Limit: int(limit),
		Redact: s.Compactor.Redact, RedactMessages: s.Compactor.ProviderView})
	if err != nil {
		Error(w, err)
		return
	}
	writeJSON(w, http.StatusOK, mcpserver.SearchOutput{Hits: hits})
}

// GET /api/threads/{id}/messages?from=&to=: the original messages of a range (default: all),
// as appended, archived ones included (memctl export --all of a range), redacted as a
// summarizing provider reads them (redactedMessage).
func (s *Server) apiMessages(w http.ResponseWriter, r *http.Request) {
	id, ok := threadParam(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	from, ok := intParam(w, "from", q.Get("from"), 1, 1)
	if !ok {
		return
	}
	to, ok := intParam(w, "to", q.Get("to"), 1<<53, 1)
	if !ok {
		return
	}
	es, err := s.Store.Messages(r.Context(), id, from, to)
	if err != nil {
		Error(w, err)
		return
	}
	views, err := s.Compactor.ReadProviderView(r.Context(), id, es)
	if err != nil {
		Error(w, err)
		return
	}
	type message struct {
		Seq     int64        `json:"seq"`
		Tokens  int          `json:"tokens"`
		Message chat.Message `json:"message"`
	}
	out := make([]message, len(es))
	for i, e := range es {
		out[i] = message{Seq: e.Seq, Tokens: e.Tokens, Message: redactedMessage(e.Message, views[i], s.Compactor.Redact)}
	}
	writeJSON(w, http.StatusOK, out)
}

// POST /api/threads/{id}/pins/{seq} pins a message (memctl pin); DELETE unpins it. Both
// refuse a cross-site request: the body, even empty, must be sent as application/json (a
// form cannot), and an Origin header must be the server's own.
func (s *Server) apiPin(w http.ResponseWriter, r *http.Request) {
	id, ok := threadParam(w, r)
	if !ok || !sameSite(w, r) {
		return
	}
	seq, ok := intParam(w, "seq", r.PathValue("seq"), 0, 1)
	if !ok {
		return
	}
	if r.Method == http.MethodDelete {
		if err := s.Store.Unpin(r.Context(), id, seq); err != nil {
			Error(w, err)
			return
		}
		writeJSON(w, http.StatusOK, mcpserver.PinOutput{Thread: id, Seq: seq})
		return
	}
	p, err := s.Compactor.Pin(r.Context(), id, seq)
	if err != nil {
		Error(w, err)
		return
	}
	writeJSON(w, http.StatusOK, mcpserver.PinOutput{Thread: id, Seq: p.Seq, Pinned: true, FromSeq: p.FromSeq, ToSeq: p.ToSeq})
}

// sameSite refuses, writing the error, a state-changing request a browser could send from
// another site: one not marked application/json, or whose Origin is another site's.
func sameSite(w http.ResponseWriter, r *http.Request) bool {
	if !isJSON(r) {
		writeCode(w, CodeUnsupported, "unsupported_media_type",
			"send this request with Content-Type: application/json", "")
		return false
	}
	if err := http.NewCrossOriginProtection().Check(r); err != nil {
		writeCode(w, CodeForbidden, "cross_origin", "cross-site request refused: "+err.Error(), "")
		return false
	}
	return true
}

// redactedMessage is m with the fields of v, its view as a provider reads it
// (compact.Compactor.ProviderView): its content, when v's text differs from m's, becomes that
// text (a string: a secret cut over two content parts is redacted in their joined text); its
// name, tool_call_id and tool calls are v's; every string of the fields it holds besides
// (Extra) is redacted with redact.
func redactedMessage(m chat.Message, v transcript.Message, redact func(string) string) chat.Message {
	out := m
	if v.Text != m.Text() {
		out.Content, _ = json.Marshal(v.Text) // a string always marshals
	} else if len(m.Content) > 0 && m.Content[0] == '[' {
		out.Content = redactJSON(m.Content, redact) // parts that are not text (an image's URL)
	}
	out.Name, out.ToolCallID = v.Name, v.ToolCallID
	out.ToolCalls = slices.Clone(m.ToolCalls)
	for i := range out.ToolCalls {
		if i < len(v.ToolCalls) {
			out.ToolCalls[i].ID, out.ToolCalls[i].Function.Name, out.ToolCalls[i].Function.Arguments = v.ToolCalls[i].ID, v.ToolCalls[i].Name, v.ToolCalls[i].Arguments
		}
		out.ToolCalls[i].Extra = redactExtra(out.ToolCalls[i].Extra, redact)
		out.ToolCalls[i].Function.Extra = redactExtra(out.ToolCalls[i].Function.Extra, redact)
	}
	out.Extra = redactExtra(m.Extra, redact)
	return out
}

// redactExtra returns the fields with every string in their values redacted.
func redactExtra(fields map[string]json.RawMessage, redact func(string) string) map[string]json.RawMessage {
	if len(fields) == 0 {
		return fields
	}
	out := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		out[k] = redactJSON(v, redact)
	}
	return out
}

// redactJSON returns the JSON value b with every string in it (keys too) redacted; b as it is
// when it holds no secret, or null when it is not JSON.
func redactJSON(b json.RawMessage, redact func(string) string) json.RawMessage {
	if redact == nil {
		return b
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return json.RawMessage("null")
	}
	changed := false
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if r := redact(x); r != x {
				changed = true
				return r
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[walk(k).(string)] = walk(e)
			}
			return out
		}
		return v
	}
	v = walk(v)
	if !changed {
		return b
	}
	out, _ := json.Marshal(v) // decoded JSON always marshals
	return out
}
