package anthropic_test

import (
	"bytes"
	"encoding/json"
	"flag"

	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/jsontext"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/anthropic"
	"github.com/memcascade/memcascade/serve/dialect"
	"github.com/memcascade/memcascade/serve/dialect/dialecttest"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

var d anthropic.Dialect

// fixture reads testdata/NAME without its trailing newline.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimRight(b, "\n")
}

// golden compares got with testdata/NAME (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
	}
}

func parse(t *testing.T, body []byte, prev *dialect.Sent) dialect.Turn {
	t.Helper()
	turn, err := d.Parse(body, prev)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	turn.Sent.Dialect = d.Name()
	return turn
}

// stored is the active context of a thread that stored msgs as they are: each entry's
// message and its encoding, as the store writes it.
func stored(t *testing.T, msgs ...chat.Message) ([]memory.Entry, []json.RawMessage) {
	t.Helper()
	entries := make([]memory.Entry, len(msgs))
	enc := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back chat.Message // as read back from the store
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		entries[i] = memory.Entry{Seq: int64(i + 1), Message: back}
		enc[i] = b
	}
	return entries, enc
}

func withoutOriginal(m chat.Message) chat.Message {
	m.Extra = nil
	return m
}

// TestParseGolden: the golden request (Claude Code's shape: system blocks with cache_control,
// tools, thinking with signatures, parallel tool_use answered by tool_result blocks beside a
// text block, an image, members the proxy does not read) as chat messages: the system blocks
// leading system messages (not the billing header's), each tool result a tool message before the rest of its user
// message, the assistant's text as content and tool_use as tool calls; where each came from;
// the tools; and each message's original, the request's bytes.
func TestParseGolden(t *testing.T) {
	body := fixture(t, "request.json")
	turn := parse(t, body, nil)
	type row struct {
		Param   string       `json:"param"`
		Message chat.Message `json:"message"`
	}
	rows := make([]row, len(turn.Messages))
	for i, m := range turn.Messages {
		rows[i] = row{turn.Param(i), withoutOriginal(m)}
	}
	out, _ := json.MarshalIndent(map[string]any{"model": turn.Model, "stream": turn.Stream, "order": turn.Order, "tools": turn.Tools, "messages": rows}, "", "  ")
	golden(t, "request.parse.json", append(out, '\n'))

	// The originals are the request's own bytes.
	for i, m := range turn.Messages {
		o := m.Extra[anthropic.Key]
		if !bytes.Contains(body, o) && turn.Param(i) != "messages[2]" {
			t.Errorf("%s: original %s is not in the request", turn.Param(i), o)
		}
	}
	if o := string(turn.Messages[len(turn.Messages)-3].Extra[anthropic.Key]); o != `{"role":"user","content":[{"type":"text","text":"<system-reminder>The files may have changed.</system-reminder>"}]}` {
		t.Errorf("the rest of messages[2] is kept as %s", o)
	}
	if turn.Same != 0 || turn.Sent == nil || len(turn.Sent.Hashes) != len(turn.Messages) {
		t.Errorf("Same %d, Sent %+v", turn.Same, turn.Sent)
	}
}

// TestRenderUnchanged: a thread that stored the golden request, not compacted, sends the
// upstream the request itself, byte for byte: members in order, system and messages as sent.
func TestRenderUnchanged(t *testing.T) {
	body := fixture(t, "request.json")
	turn := parse(t, body, nil)
	active, enc := stored(t, turn.Messages...)
	got, err := d.Render(turn, active, enc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("the upstream body differs from the request:\n got %s\nwant %s", got, body)
	}
}

// TestRenderAsSent: a turn whose active context is its request's messages, as sent, is
// forwarded as the request's own bytes (dialect.Turn.SentBody); the same turn rendered is the
// same request, and one with serve's note or a member changed is rendered.
func TestRenderAsSent(t *testing.T) {
	dialecttest.AsSent(t, d, fixture(t, "request.json"))
	for _, name := range []string{"turn1.json", "turn2.json", "turn2-toolresult.json", "turn3.json"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile("../testdata/agents/captures/claude/" + name)
			if err != nil {
				t.Fatal(err)
			}
			body := jsontext.Compact(b)
			if !bytes.Contains(body, []byte(`"role":"system"`)) {
				dialecttest.AsSent(t, d, body)
				return
			}
			// A system message among the messages: Render writes it among the system
			// prompt's blocks, AsSent or not.
			turn := parse(t, body, nil)
			turn.AsSent = true
			active, enc := stored(t, turn.Messages...)
			if got, err := d.Render(turn, active, enc); err != nil || bytes.Equal(got, body) {
				t.Errorf("a system message among the messages: forwarded as sent (%v)", err)
			}
		})
	}
}

// TestRenderAsSentAssistantFirst: a request whose messages start with an assistant message is
// rendered, AsSent or not: the Messages API wants a user message first (Continued).
func TestRenderAsSentAssistantFirst(t *testing.T) {
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"assistant","content":"Hello."},{"role":"user","content":"Hi."}]}`)
	turn := parse(t, body, nil)
	turn.AsSent = true
	active, enc := stored(t, turn.Messages...)
	got, err := d.Render(turn, active, enc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte(anthropic.Continued)) {
		t.Errorf("no user message put first: %s", got)
	}
}

// nextTurn is the golden request's next turn as Claude Code sends it: the reply and a new
// user message added, cache_control moved from the last message to the new one (whose text
// is sent as a block to carry it), the earlier last message sent without it.
func nextTurn(t *testing.T, body []byte, reply chat.Message) []byte {
	t.Helper()
	var req map[string]json.RawMessage
	var msgs []json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(req["messages"], &msgs)
	last := len(msgs) - 1
	msgs[last] = json.RawMessage(strings.Replace(string(msgs[last]), `,"cache_control":{"type":"ephemeral"}`, "", 1))
	msgs = append(msgs, reply.Extra[anthropic.Key],
		json.RawMessage(`{"role":"user","content":[{"type":"text","text":"Thanks. Run it.","cache_control":{"type":"ephemeral"}}]}`))
	m, _ := json.Marshal(msgs)
	i := bytes.Index(body, req["messages"])
	return append(append(append([]byte{}, body[:i]...), m...), body[i+len(req["messages"]):]...)
}

const replyJSON = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"Add a table test.","signature":"EqMBsig-3/+=="},{"type":"text","text":"Here is the test \u003cmain_test.go\u003e:"},{"type":"tool_use","id":"toolu_02","name":"Write","input":{"file_path":"/src/main_test.go","content":"package main\n"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":50}}`

func reply(t *testing.T) chat.Message {
	t.Helper()
	msgs, usage, err := d.Reply([]byte(replyJSON))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || usage != (dialect.Usage{PromptTokens: 2112, CachedTokens: 2000, CompletionTokens: 50}) {
		t.Fatalf("Reply: %d messages, usage %+v", len(msgs), usage)
	}
	return msgs[0]
}

// TestRenderNextTurn: Claude Code's next turn moves cache_control to its new message and
// sends the one that had it without: each message is the same message (Same counts all of
// the previous turn's), and the upstream gets this request, byte for byte, cache_control
// where the agent put it this turn, though the store holds the messages as first sent.
func TestRenderNextTurn(t *testing.T) {
	body := fixture(t, "request.json")
	first := parse(t, body, nil)
	r := reply(t)
	body2 := nextTurn(t, body, r)
	second := parse(t, body2, first.Sent)
	if second.Same != len(first.Messages) {
		t.Errorf("Same = %d, want %d (the previous turn's messages)", second.Same, len(first.Messages))
	}
	if got, want := withoutOriginal(second.Messages[len(first.Messages)]), withoutOriginal(r); !reflect.DeepEqual(got, want) {
		t.Errorf("the resent reply reads as %+v, stored as %+v", got, want)
	}
	active, enc := stored(t, append(append(first.Messages, r), second.Messages[len(second.Messages)-1])...)
	got, err := d.Render(second, active, enc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body2) {
		t.Fatalf("the upstream body differs from the request:\n got %s\nwant %s", got, body2)
	}
}

// TestRenderStoredOriginals: an agent that sends only its new turn: the earlier messages are
// written from the stored originals, thinking blocks (their signatures) byte for byte, and
// without the cache_control they were stored with, so that the request carries only the
// breakpoints the agent put this turn (the API takes four at most).
func TestRenderStoredOriginals(t *testing.T) {
	body := fixture(t, "request.json")
	first := parse(t, body, nil)
	r := reply(t)
	only := parse(t, []byte(`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"Thanks. Run it.","cache_control":{"type":"ephemeral"}}]}]}`), nil)
	active, enc := stored(t, append(append(first.Messages, r), only.Messages...)...)
	got, err := d.Render(only, active, enc)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		System   []json.RawMessage `json:"system"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(got, &req); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	if n := bytes.Count(got, []byte(`"cache_control"`)); n != 1 {
		t.Errorf("%d cache_control in the body, want the turn's one: %s", n, got)
	}
	for _, sig := range []string{`"signature":"EqQBCkYIBxgCKkBf0x+/=sig-1"`, `"signature":"EpMBCkYIBxgCKkAx/sig-2=="`, `"signature":"EqMBsig-3/+=="`} {
		if !bytes.Contains(got, []byte(sig)) {
			t.Errorf("the body lacks %s", sig)
		}
	}
	if len(req.System) != 2 || string(req.System[0]) != `{"type":"text","text":"You are Claude Code, Anthropic's official CLI for Claude."}` {
		t.Errorf("system: %s", req.System)
	}
	if len(req.Messages) != 7 {
		t.Fatalf("%d messages, want 7: %s", len(req.Messages), got)
	}
	if want := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A","content":"go.mod\nmain.go\n"},{"type":"tool_result","tool_use_id":"toolu_01B","content":[{"type":"text","text":"package main\n\nfunc main() { println(\"hello <world>\") }\n"}]},{"type":"text","text":"<system-reminder>The files may have changed.</system-reminder>"}]}`; string(req.Messages[2]) != want {
		t.Errorf("messages[2] = %s\nwant %s", req.Messages[2], want)
	}
}

// TestRenderCompacted: a compacted active context. The summary joins the system prompt as a
// text block, so does a later system message (after the request's billing header block); a conversation that starts with an assistant
// message gets a user message first; a masked tool result is written from its placeholder, not
// its original; tool results and the user's text in a row are one user message, results
// first; a message serve wrote (no original) is converted.
func TestRenderCompacted(t *testing.T) {
	body := fixture(t, "request.json")
	turn := parse(t, body, nil)
	all, enc := stored(t, turn.Messages...)
	// all: 2 system (the billing header is not stored), user, assistant (2 calls), tool A,
	// tool B, user text, assistant, user.
	masked := all[4].Marked(&memory.Mark{Masked: &memory.Masked{Seq: all[4].Seq, Tool: "Read", Digest: "first line: package main", Tokens: 5}})
	maskedEnc, _ := json.Marshal(masked.Message)
	later, laterEnc := stored(t, chat.TextMessage(chat.RoleSystem, "Answer in French."), chat.TextMessage(chat.RoleUser, "serve's own"))
	active := []memory.Entry{all[0], all[1], memory.SummaryEntry(7, chat.RoleUser, "Summary: the user asked for a listing.", 10, 3, 3),
		all[3], masked, all[5], later[0], all[6], later[1], all[7], all[8]}
	encs := []json.RawMessage{enc[0], enc[1], nil, enc[3], maskedEnc, enc[5], laterEnc[0], enc[6], laterEnc[1], enc[7], enc[8]}
	got, err := d.Render(turn, active, encs)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		System   []json.RawMessage `json:"system"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(got, &req); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	var sys []string
	for _, b := range req.System {
		sys = append(sys, string(b))
	}
	wantSys := []string{
		`{"type":"text","text":"x-anthropic-billing-header: cc_version=2.0.0; cc_entrypoint=cli"}`,
		`{"type":"text","text":"You are Claude Code, Anthropic's official CLI for Claude.","cache_control":{"type":"ephemeral"}}`,
		`{"type":"text","text":"Use the tools to help the user with software engineering tasks.","cache_control":{"type":"ephemeral","ttl":"1h"}}`,
		`{"type":"text","text":"Summary: the user asked for a listing."}`,
		`{"type":"text","text":"Answer in French."}`,
	}
	if !reflect.DeepEqual(sys, wantSys) {
		t.Errorf("system:\n%s\nwant\n%s", strings.Join(sys, "\n"), strings.Join(wantSys, "\n"))
	}
	var msgs []string
	for _, b := range req.Messages {
		msgs = append(msgs, string(b))
	}
	raw := splitMessages(t, body)
	wantMsgs := []string{
		`{"role":"user","content":[{"type":"text","text":"(earlier messages were summarized above)"}]}`,
		raw[1],
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A","content":"[tool result masked to save context: call toolu_01A (Read), 0 tokens, 0 bytes, kept in history; digest: first line: package main]"},{"type":"tool_result","tool_use_id":"toolu_01B","content":[{"type":"text","text":"package main\n\nfunc main() { println(\"hello <world>\") }\n"}]},{"type":"text","text":"<system-reminder>The files may have changed.</system-reminder>"},{"type":"text","text":"serve's own"}]}`,
		raw[3],
		raw[4],
	}
	if !reflect.DeepEqual(msgs, wantMsgs) {
		t.Errorf("messages:\n%s\nwant\n%s", strings.Join(msgs, "\n"), strings.Join(wantMsgs, "\n"))
	}
	// Every other member as sent, in its order.
	var gotKeys, wantKeys []string
	for _, k := range turn.Order {
		wantKeys = append(wantKeys, k)
	}
	dec := json.NewDecoder(bytes.NewReader(got))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		gotKeys = append(gotKeys, k.(string))
		var v json.RawMessage
		dec.Decode(&v)
		if s := k.(string); s != "system" && s != "messages" && !bytes.Equal(v, turn.Fields[s]) {
			t.Errorf("member %s = %s, sent %s", s, v, turn.Fields[s])
		}
	}
	if !reflect.DeepEqual(gotKeys, wantKeys) {
		t.Errorf("members %v, want %v", gotKeys, wantKeys)
	}
}

func splitMessages(t *testing.T, body []byte) []string {
	t.Helper()
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		out[i] = string(m)
	}
	return out
}

// TestWireFormsHashTheSame: a message sent as a string, as a text block, or as a text block
// with cache_control is one message: the same chat message, the same hash; so is a tool
// result whose block carries cache_control, or whose content is a block rather than a string.
func TestWireFormsHashTheSame(t *testing.T) {
	forms := [][2]string{
		{`{"role":"user","content":"hi"}`, `{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}`},
		{`{"role":"user","content":"hi"}`, `{"role":"user","content":[{"type":"text","text":"hi"}]}`},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}],"cache_control":{"type":"ephemeral"}}]}`},
		{`{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}},{"type":"text","text":"see"}]}`, `{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"},"cache_control":{"type":"ephemeral"}},{"type":"text","text":"see","cache_control":{"type":"ephemeral"}}]}`},
	}
	assistant := `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}`
	for _, f := range forms {
		var turns [2]dialect.Turn
		for i, m := range f {
			msgs := "[" + m + "]"
			if strings.Contains(m, "tool_result") {
				msgs = `[{"role":"user","content":"go"},` + assistant + "," + m + "]"
			}
			turns[i] = parse(t, []byte(`{"model":"m","messages":`+msgs+`}`), nil)
		}
		a, b := turns[0], turns[1]
		if len(a.Messages) != len(b.Messages) {
			t.Fatalf("%s: %d messages, %s: %d", f[0], len(a.Messages), f[1], len(b.Messages))
		}
		for i := range a.Messages {
			if !reflect.DeepEqual(withoutOriginal(a.Messages[i]), withoutOriginal(b.Messages[i])) || a.Sent.Hashes[i] != b.Sent.Hashes[i] {
				t.Errorf("%s and %s differ: %+v, %+v", f[0], f[1], withoutOriginal(a.Messages[i]), withoutOriginal(b.Messages[i]))
			}
		}
		if again := parse(t, []byte(`{"model":"m","messages":[`+strings.TrimPrefix(f[1], "")+`]}`), a.Sent); !strings.Contains(f[0], "tool_result") && again.Same != 1 {
			t.Errorf("%s after %s: Same %d, want 1", f[1], f[0], again.Same)
		}
	}
}

// sse writes events as an upstream sends them.
func sse(events ...string) []string { return events }

// replyEvents is replyJSON as a stream, with a ping and deltas in pieces.
var replyEvents = sse(
	`message_start`, `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":1}}}`,
	`ping`, `{"type": "ping"}`,
	`content_block_start`, `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
	`content_block_delta`, `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Add a table"}}`,
	`content_block_delta`, `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" test."}}`,
	`content_block_delta`, `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqMBsig-3/+=="}}`,
	`content_block_stop`, `{"type":"content_block_stop","index":0}`,
	`content_block_start`, `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
	`content_block_delta`, `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Here is the test <main"}}`,
	`content_block_delta`, `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"_test.go>:"}}`,
	`content_block_stop`, `{"type":"content_block_stop","index":1}`,
	`content_block_start`, `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_02","name":"Write","input":{}}}`,
	`content_block_delta`, `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`,
	`content_block_delta`, `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\": \"/src/main_test.go\","}}`,
	`content_block_delta`, `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"content\":\"package main\\n\"}"}}`,
	`content_block_stop`, `{"type":"content_block_stop","index":2}`,
	`message_delta`, `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":50}}`,
	`message_stop`, `{"type":"message_stop"}`,
)

// TestStreamIsTheReply: a streamed message assembles to what Reply reads of the same message
// as JSON, its original byte for byte (the thinking block's signature, the tool's input); the
// usage is message_start's, its output tokens the message_delta's; ping passes, message_stop is held back (End).
func TestStreamIsTheReply(t *testing.T) {
	want := reply(t)
	s := d.Stream()
	for i := 0; i < len(replyEvents); i += 2 {
		act, err := s.Event(replyEvents[i], []byte(replyEvents[i+1]))
		if err != nil {
			t.Fatalf("%s: %v", replyEvents[i], err)
		}
		if wantAct := map[bool]dialect.Action{true: dialect.End, false: dialect.Pass}[replyEvents[i] == "message_stop"]; act != wantAct {
			t.Errorf("%s: action %v", replyEvents[i], act)
		}
		if replyEvents[i] == "message_delta" && !s.Done() {
			t.Error("not done after the stop_reason")
		}
	}
	if !s.Done() || s.Failed() {
		t.Fatalf("Done %v, Failed %v", s.Done(), s.Failed())
	}
	got := s.Messages()
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("assembled %+v\nReply     %+v\n(originals %s\n           %s)", got, want, got[0].Extra[anthropic.Key], want.Extra[anthropic.Key])
	}
	if u := s.Usage(); u != (dialect.Usage{PromptTokens: 2112, CachedTokens: 2000, CompletionTokens: 50}) {
		t.Errorf("usage %+v", u)
	}
	if want.Text() != "Here is the test <main_test.go>:" || len(want.ToolCalls) != 1 || want.ToolCalls[0].Function.Arguments != `{"file_path":"/src/main_test.go","content":"package main\n"}` {
		t.Errorf("reply %+v", want)
	}
}

// TestStreamFaults: an error event fails the stream (passed on, nothing stored); a delta of a
// block that did not start, a tool input that is not JSON, an index out of bounds cannot be
// assembled; a stream cut before its stop is not done.
func TestStreamFaults(t *testing.T) {
	s := d.Stream()
	if act, err := s.Event("error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)); err != nil || act != dialect.Pass || !s.Failed() {
		t.Errorf("error event: %v %v, failed %v", act, err, s.Failed())
	}
	for _, evs := range [][]string{
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`},
		{"content_block_start", `{"type":"content_block_start","index":1000000,"content_block":{"type":"text","text":""}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
			"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_start", `not json`},
	} {
		s := d.Stream()
		var err error
		for i := 0; i < len(evs) && err == nil; i += 2 {
			_, err = s.Event(evs[i], []byte(evs[i+1]))
		}
		if err == nil {
			t.Errorf("%v: no error", evs)
		}
	}
	s = d.Stream()
	for i := 0; i < 10; i += 2 {
		s.Event(replyEvents[i], []byte(replyEvents[i+1]))
	}
	if s.Done() {
		t.Error("a stream cut before its stop is done")
	}
}

// TestTooLong: Anthropic's refusals of a prompt over the window, and nothing else.
func TestTooLong(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   bool
	}{
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_1"}`, true},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 188240 + 21333 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again"}}`, true},
		{413, `{"type":"error","error":{"type":"request_too_large","message":"Prompt is too long"}}`, true},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0: unexpected tool_use_id"}}`, false},
		{429, `{"type":"error","error":{"type":"rate_limit_error","message":"prompt is too long"}}`, false},
		{500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, false},
	} {
		if got := d.TooLong(c.status, []byte(c.body)); got != c.want {
			t.Errorf("TooLong(%d, %s) = %v", c.status, c.body, got)
		}
	}
}

// TestErrors: serve's errors in Anthropic's shape, the type from the status, x-should-retry:
// false on a 4xx; a broken stream's event likewise.
func TestErrors(t *testing.T) {
	for status, typ := range map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 409: "invalid_request_error", 413: "request_too_large", 429: "rate_limit_error",
		500: "api_error", 502: "api_error", 503: "api_error", 529: "overloaded_error"} {
		w := httptest.NewRecorder()
		d.WriteError(w, status, memory.CodeInvalid, "history_conflict", "it differs", "messages[3]")
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
				Code    string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != status || e.Type != "error" || e.Error.Type != typ || e.Error.Message != "it differs" || e.Error.Code != "history_conflict" {
			t.Errorf("%d: %d %s", status, w.Code, w.Body)
		}
		if retry := w.Header().Get("X-Should-Retry"); (retry == "false") != (status < 500) {
			t.Errorf("%d: x-should-retry %q", status, retry)
		}
	}
	ev := string(d.StreamError("upstream_stream_broken", "it broke"))
	if ev != `event: error`+"\n"+`data: {"type":"error","error":{"type":"api_error","message":"it broke","code":"upstream_stream_broken"}}`+"\n\n" {
		t.Errorf("StreamError: %q", ev)
	}
	if b, _ := d.LocalAnswer(dialect.CountTokens, dialect.Turn{}, 42, ""); string(b) != `{"input_tokens":42}` {
		t.Errorf("count_tokens: %s", b)
	}
}

// TestUpstream: the upstream route keeps the agent's query; its anthropic-* headers pass, with
// a version when it sent none; the configured key wins over the agent's, which is forwarded
// otherwise.
func TestUpstream(t *testing.T) {
	for _, c := range []struct {
		key, apiKey, auth, version string
		wantKey, wantAuth          string
	}{
		{key: "conf", apiKey: "agent", wantKey: "conf"},
		{apiKey: "agent", version: "2024-01-01", wantKey: "agent"},
		{auth: "Bearer oauth", wantAuth: "Bearer oauth"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/messages?beta=true", nil)
		r.Header.Set("Anthropic-Beta", "interleaved-thinking-2025-05-14")
		if c.apiKey != "" {
			r.Header.Set("X-Api-Key", c.apiKey)
		}
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		if c.version != "" {
			r.Header.Set("Anthropic-Version", c.version)
		}
		up, _ := http.NewRequest(http.MethodPost, "https://api.anthropic.com/v1", nil)
		path := d.Upstream(dialect.Turn{Stream: true}, up, r, c.key)
		u := up.URL.JoinPath(path)
		want := c.version
		if want == "" {
			want = anthropic.DefaultVersion
		}
		h := up.Header
		if u.String() != "https://api.anthropic.com/v1/messages?beta=true" || h.Get("Accept") != "text/event-stream" ||
			h.Get("Anthropic-Version") != want || h.Get("Anthropic-Beta") != "interleaved-thinking-2025-05-14" ||
			h.Get("X-Api-Key") != c.wantKey || h.Get("Authorization") != c.wantAuth {
			t.Errorf("%+v: %s %v", c, u, h)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
	r.Header.Set(anthropic.SessionHeader, "0b6f-session")
	if got := d.Thread(r); got != "0b6f-session" {
		t.Errorf("Thread = %q", got)
	}
}

// TestParseRefuses: malformed requests name the parameter at fault.
func TestParseRefuses(t *testing.T) {
	for body, param := range map[string]string{
		`{"messages":[{"role":"user","content":"x"}]}`:                                                "model",
		`{"model":"m","messages":[]}`:                                                                 "messages",
		`{"model":"m","messages":[{"role":"tool","content":"x"}]}`:                                    "messages[0].role",
		`{"model":"m","messages":[{"role":"system","content":[{"type":"image"}]}]}`:                   "messages[0].content[0]",
		`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"user","content":3}]}`:        "messages[1].content",
		`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`: "messages[0].content[0].tool_use_id",
		`{"model":"m","system":[{"type":"image"}],"messages":[{"role":"user","content":"x"}]}`:        "system[0]",
		`{"model":"m","system":3,"messages":[{"role":"user","content":"x"}]}`:                         "system",
		`{"model":"m","stream":"yes","messages":[{"role":"user","content":"x"}]}`:                     "stream",
		`{"model":"m","tools":{},"messages":[{"role":"user","content":"x"}]}`:                         "tools",
	} {
		_, err := d.Parse([]byte(body), nil)
		br, ok := err.(*dialect.BadRequest)
		if !ok || br.Param != param {
			t.Errorf("%s: %v, want a bad request naming %s", body, err, param)
		}
	}

}

// TestRenderRuns: messages of one role in a row are one message when the active context made
// them so (an assistant message between them left out); the agent's own consecutive messages
// are written as it sent them.
func TestRenderRuns(t *testing.T) {
	turn := parse(t, []byte(`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"user","content":[{"type":"text","text":"d"}]}]}`), nil)
	all, enc := stored(t, turn.Messages...)
	for _, c := range []struct {
		keep []int
		want string
	}{
		{[]int{0, 2, 3}, `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"c"},{"type":"text","text":"d"}]}]`},
		{[]int{0, 1, 2, 3}, `[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"user","content":[{"type":"text","text":"d"}]}]`},
		{[]int{1, 2, 3}, `[{"role":"user","content":[{"type":"text","text":"(earlier messages were summarized above)"}]},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"user","content":[{"type":"text","text":"d"}]}]`},
	} {
		var active []memory.Entry
		var encs []json.RawMessage
		for _, i := range c.keep {
			active, encs = append(active, all[i]), append(encs, enc[i])
		}
		got, err := d.Render(turn, active, encs)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"model":"m","messages":` + c.want + `}`; string(got) != want {
			t.Errorf("messages %v:\n got %s\nwant %s", c.keep, got, want)
		}
	}
}

// TestSystemAmongMessages: Claude Code sends its environment's description as a message of role
// system among the messages: it is read as system messages, one per block, and written to the
// upstream among the system prompt's blocks, so that the messages alternate user and assistant.
func TestSystemAmongMessages(t *testing.T) {
	body := []byte(`{"model":"m","system":"Be brief.","messages":[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"text","text":"# Environment\ncwd: /src"},{"type":"text","text":"Today is day 3."}]},{"role":"user","content":"go on"}]}`)
	turn := parse(t, body, nil)
	var roles []string
	for _, m := range turn.Messages {
		roles = append(roles, m.Role)
	}
	if want := []string{"system", "user", "system", "system", "user"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles %v, want %v", roles, want)
	}
	if p := turn.Param(3); p != "messages[1].content[1]" {
		t.Errorf("the second block is %q", p)
	}
	active, enc := stored(t, turn.Messages...)
	got, err := d.Render(turn, active, enc)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		System   []struct{ Type, Text string }
		Messages []struct {
			Role    string
			Content json.RawMessage
		}
	}
	if err := json.Unmarshal(got, &out); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	var texts []string
	for _, b := range out.System {
		texts = append(texts, b.Text)
	}
	if want := []string{"Be brief.", "# Environment\ncwd: /src", "Today is day 3."}; !reflect.DeepEqual(texts, want) {
		t.Errorf("system blocks %q, want %q (%s)", texts, want, got)
	}
	for _, m := range out.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			t.Errorf("a message of role %q went upstream: %s", m.Role, got)
		}
	}
}
