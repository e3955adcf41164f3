package responses_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/fakeupstream"
	"github.com/memcascade/memcascade/internal/jsontext"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
	"github.com/memcascade/memcascade/serve/dialect/dialecttest"
	"github.com/memcascade/memcascade/serve/responses"
)

var d responses.Dialect

// capture reads a request Codex CLI 0.171 sent, compact (the capture is indented).
func capture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/agents/captures/codex/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return jsontext.Compact(b)
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

// stored is the active context of a thread that stored msgs as they are.
func stored(t *testing.T, msgs ...chat.Message) ([]memory.Entry, []json.RawMessage) {
	t.Helper()
	entries := make([]memory.Entry, len(msgs))
	enc := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back chat.Message
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

// row is a parsed message as the tests read it: where it came from, its role, its text and
// its calls.
func row(turn dialect.Turn, i int) string {
	m := turn.Messages[i]
	text := m.Text()
	if len(text) > 30 {
		text = text[:30]
	}
	s := turn.Param(i) + " " + m.Role + ": " + text
	for _, c := range m.ToolCalls {
		s += " [" + c.ID + " " + c.Function.Name + " " + c.Function.Arguments + "]"
	}
	if m.ToolCallID != "" {
		s += " (" + m.ToolCallID + ")"
	}
	return s
}

// TestParseCodexCaptures: each request Codex CLI sent parses; its input items are the messages
// expected (developer items system-like, a reasoning item with the assistant message and the
// call after it one assistant message, its text the message's, not the reasoning summary; the
// call output a tool message), each named by its input index; every other member passes
// through in order; each message's original is the request's items, byte for byte.
func TestParseCodexCaptures(t *testing.T) {
	turn := parse(t, capture(t, "turn3.json"), nil)
	want := []string{
		"input[0] developer: You are Codex, a coding agent ",
		"input[1] developer: <skills_instructions>\n## Skill",
		"input[2] user: <environment_context>\n  <cwd>/",
		"input[3] user: Turn one: say hi.",
		"input[4] assistant: Fake reply 0.",
		"input[6] user: Turn two: TOOLCALL please run ",
		`input[7] assistant: Running it. [call_fake1 exec_command {"cmd":"echo hello-from-tool"}]`,
		"input[10] tool: Chunk ID: 87571d\nWall time: 1. (call_fake1)",
		"input[11] assistant: The tool printed hello-from-to",
		"input[12] user: Turn three: summarize.",
	}
	var got []string
	for i := range turn.Messages {
		got = append(got, row(turn, i))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if o := strings.Join(turn.Order, ","); o != "model,stream,input,tools,tool_choice,parallel_tool_calls,reasoning,store,include,prompt_cache_key,text,client_metadata" {
		t.Errorf("order %s", o)
	}
	if turn.Model != "gpt-5.5" || !turn.Stream || len(turn.Tools) != 10 || turn.Tools[3].Function.Name != "apply_patch" || turn.Tools[8].Function.Name != "tool_search" {
		t.Errorf("model %q stream %v tools %+v", turn.Model, turn.Stream, turn.Tools)
	}
	body := capture(t, "turn3.json")
	for i, m := range turn.Messages {
		var items []json.RawMessage
		if err := json.Unmarshal(m.Extra[responses.Key], &items); err != nil || len(items) == 0 {
			t.Fatalf("%s: original %s", turn.Param(i), m.Extra[responses.Key])
		}
		for _, it := range items {
			if !bytes.Contains(body, it) {
				t.Errorf("%s: item %s is not in the request", turn.Param(i), it)
			}
		}
	}
	if n := strings.Count(string(turn.Messages[6].Extra[responses.Key]), `"type":`); n < 3 || !strings.Contains(string(turn.Messages[6].Extra[responses.Key]), `"encrypted_content":"fake-encrypted-1"`) {
		t.Errorf("input[7]'s original: %s", turn.Messages[6].Extra[responses.Key])
	}
}

// TestParseSameAsPrevious: Codex resends its history each turn: each capture parsed against
// the previous one takes the messages it shares byte for byte from it (Same).
func TestParseSameAsPrevious(t *testing.T) {
	names := []string{"turn1.json", "turn2.json", "turn2-toolresult.json", "turn3.json"}
	wantSame := []int{0, 4, 6, 8}
	wantLen := []int{4, 6, 8, 10}
	var prev *dialect.Sent
	for i, name := range names {
		turn := parse(t, capture(t, name), prev)
		if turn.Same != wantSame[i] || len(turn.Messages) != wantLen[i] {
			t.Errorf("%s: Same %d of %d messages, want %d of %d", name, turn.Same, len(turn.Messages), wantSame[i], wantLen[i])
		}
		fresh := parse(t, capture(t, name), nil)
		if !reflect.DeepEqual(turn.Messages, fresh.Messages) {
			t.Errorf("%s: the messages taken from the previous request differ from those decoded", name)
		}
		prev = turn.Sent
	}
}

// TestRenderUnchanged: a thread that stored each capture, not compacted, sends the upstream
// the request itself, byte for byte.
func TestRenderUnchanged(t *testing.T) {
	for _, name := range []string{"turn1.json", "turn2.json", "turn2-toolresult.json", "turn3.json"} {
		body := capture(t, name)
		turn := parse(t, body, nil)
		active, enc := stored(t, turn.Messages...)
		got, err := d.Render(turn, active, enc)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, body) {
			t.Errorf("%s: the upstream body differs from the request:\n got %.300s\nwant %.300s", name, got, body)
		}
		// The stored originals alone (the request's items not at hand) give the same body.
		other := parse(t, []byte(`{"model":"gpt-5.5","stream":true,"input":"x","tools":[],"tool_choice":"auto","parallel_tool_calls":true,"reasoning":{},"store":false,"include":[],"prompt_cache_key":"","text":{},"client_metadata":{}}`), nil)
		got, _ = d.Render(other, active, enc)
		var a, b map[string]any
		json.Unmarshal(got, &a)
		json.Unmarshal(body, &b)
		if !reflect.DeepEqual(a["input"], b["input"]) {
			t.Errorf("%s: the stored originals give another input", name)
		}
	}
}

// TestRenderAsSent: a turn whose active context is its request's messages, as sent, is
// forwarded as the request's own bytes (dialect.Turn.SentBody), but for one that names
// previous_response_id (which Render leaves out); the same turn rendered is the same request,
// and one with serve's note or a member changed is rendered.
func TestRenderAsSent(t *testing.T) {
	for _, name := range []string{"turn1.json", "turn2.json", "turn2-toolresult.json", "turn3.json"} {
		t.Run(name, func(t *testing.T) {
			dialecttest.AsSent(t, d, capture(t, name))
		})
	}
	body := []byte(`{"model":"gpt-5.5","previous_response_id":"resp_1","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`)
	turn := parse(t, body, nil)
	turn.AsSent = true
	active, enc := stored(t, turn.Messages...)
	got, err := d.Render(turn, active, enc)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(got, []byte("previous_response_id")) {
		t.Errorf("previous_response_id forwarded: %s", got)
	}
}

// TestRenderCompacted: a summary, a masked tool result and an assistant message written by
// another dialect are items of their own; instructions are written from the leading system
// message; previous_response_id is left out; a string input is written as sent.
func TestRenderCompacted(t *testing.T) {
	body := []byte(`{"model":"m","instructions":"Be brief.","previous_response_id":"resp_1","input":[{"type":"message","role":"user","content":"now?"}],"store":false}`)
	turn := parse(t, body, nil)
	if turn.Messages[0].Role != chat.RoleSystem || turn.Param(0) != "instructions" || turn.Param(1) != "input[0]" {
		t.Fatalf("messages %+v params %v", turn.Messages, turn.Params)
	}
	active, enc := stored(t, turn.Messages[0])
	sum := memory.Entry{Seq: 2, CompactionID: 7, Message: chat.TextMessage(chat.RoleSystem, "Summary: the build failed.")}
	call := chat.Message{Role: chat.RoleAssistant, Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "sh", Arguments: `{"cmd":"ls"}`}}}}
	res := chat.TextMessage(chat.RoleTool, "a\nb")
	res.ToolCallID = "c1"
	more, menc := stored(t, call, res, turn.Messages[1])
	active = append(append(active, sum), more...)
	enc = append(append(enc, nil), menc...)
	got, err := d.Render(turn, active, enc)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","instructions":"Be brief.","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"Summary: the build failed."}]},{"arguments":"{\"cmd\":\"ls\"}","call_id":"c1","name":"sh","type":"function_call"},{"call_id":"c1","output":"a\nb","type":"function_call_output"},{"type":"message","role":"user","content":"now?"}],"store":false}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	str := []byte(`{"model":"m","input":"hello"}`)
	turn = parse(t, str, nil)
	active, enc = stored(t, turn.Messages...)
	if got, _ := d.Render(turn, active, enc); !bytes.Equal(got, str) {
		t.Errorf("a string input: %s", got)
	}
}

// events reads a stream's events: name and data.
func events(t *testing.T, b []byte) [][2]string {
	var out [][2]string
	var name string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if v, ok := strings.CutPrefix(l, "event: "); ok {
			name = v
		} else if v, ok := strings.CutPrefix(l, "data: "); ok {
			out = append(out, [2]string{name, v})
		}
	}
	return out
}

// TestStreamIsTheReply: the fake Responses upstream's reply (reasoning, text, a call) read as
// JSON and as a stream gives the same messages and usage; resent by the agent as input items,
// they parse as the same messages.
func TestStreamIsTheReply(t *testing.T) {
	reply := fakeupstream.Reply{Thinking: "I should list.", Text: "Listing.", Tool: &fakeupstream.ToolCall{ID: "call_7", Name: "sh", Input: `{"cmd":"ls -la"}`}}
	f := fakeupstream.NewResponses(fakeupstream.Options{Reply: fakeupstream.Replies(reply)})
	defer f.Close()
	post := func(stream bool) []byte {
		body := `{"model":"m","input":"hi","stream":` + map[bool]string{true: "true", false: "false"}[stream] + `}`
		resp, err := http.Post(f.URL+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	msgs, u, err := d.Reply(post(false))
	if err != nil {
		t.Fatal(err)
	}
	s := d.Stream()
	var ends int
	for _, ev := range events(t, post(true)) {
		a, err := s.Event(ev[0], []byte(ev[1]))
		if err != nil {
			t.Fatalf("%s: %v", ev[0], err)
		}
		if a == dialect.End {
			ends++
			if ev[0] != "response.completed" {
				t.Errorf("End on %s", ev[0])
			}
		}
	}
	if !s.Done() || s.Failed() || ends != 1 {
		t.Fatalf("done %v failed %v ends %d", s.Done(), s.Failed(), ends)
	}
	// The fake numbers its items by request: the stream's are the next ones.
	streamed := s.Messages()
	if len(streamed) != 1 || !reflect.DeepEqual(withoutOriginal(streamed[0]), withoutOriginal(msgs[0])) || s.Usage().PromptTokens == 0 ||
		string(streamed[0].Extra[responses.Key]) != strings.NewReplacer("fake-encrypted-0", "fake-encrypted-1", "fake0", "fake1").Replace(string(msgs[0].Extra[responses.Key])) {
		t.Errorf("stream %+v %+v\njson %+v %+v", streamed, s.Usage(), msgs, u)
	}
	if len(msgs) != 1 || msgs[0].Text() != "Listing." || len(msgs[0].ToolCalls) != 1 || msgs[0].ToolCalls[0].ID != "call_7" || u.PromptTokens == 0 {
		t.Fatalf("reply %+v usage %+v", msgs, u)
	}
	var out struct {
		Output []json.RawMessage `json:"output"`
	}
	json.Unmarshal(post(false), &out)
	in, _ := json.Marshal(map[string]any{"model": "m", "input": out.Output})
	turn := parse(t, in, nil)
	if len(turn.Messages) != 1 || !reflect.DeepEqual(withoutOriginal(turn.Messages[0]), withoutOriginal(msgs[0])) {
		t.Errorf("the reply resent parses as %+v, stored %+v", turn.Messages, msgs)
	}
	// A stream that fails is Failed, not Done.
	s = d.Stream()
	s.Event("response.created", []byte(`{"type":"response.created","response":{}}`))
	s.Event("response.failed", []byte(`{"type":"response.failed","response":{"status":"failed"}}`))
	if !s.Failed() || s.Done() {
		t.Errorf("a failed stream: failed %v done %v", s.Failed(), s.Done())
	}
}

// TestTooLongAndErrors: the fake's context_length_exceeded refusal is too long, another 400
// is not; errors are in OpenAI's shape, a stream's error an error event.
func TestTooLongAndErrors(t *testing.T) {
	f := fakeupstream.NewResponses(fakeupstream.Options{Window: 10})
	defer f.Close()
	resp, err := http.Post(f.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"m","input":"`+strings.Repeat("long ", 50)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !d.TooLong(resp.StatusCode, b) {
		t.Errorf("the fake's refusal %d %s is not too long", resp.StatusCode, b)
	}
	if d.TooLong(400, []byte(`{"error":{"message":"Invalid value: 'x'.","type":"invalid_request_error","param":"input","code":"invalid_value"}}`)) {
		t.Error("an invalid value is too long")
	}
	w := httptest.NewRecorder()
	d.WriteError(w, 409, memory.CodeConflict, "history_conflict", "the request shares nothing", "input[3]")
	if w.Code != 409 || strings.TrimSpace(w.Body.String()) != `{"error":{"message":"the request shares nothing","type":"invalid_request_error","param":"input[3]","code":"history_conflict"}}` {
		t.Errorf("WriteError: %d %s", w.Code, w.Body)
	}
	if got := string(d.StreamError("upstream_error", "it broke")); got != "event: error\ndata: {\"type\":\"error\",\"code\":\"upstream_error\",\"message\":\"it broke\",\"param\":null}\n\n" {
		t.Errorf("StreamError: %q", got)
	}
}

// TestUpstream: the route is /responses; the configured key is the bearer token, else the
// agent's Authorization.
func TestUpstream(t *testing.T) {
	turn := parse(t, []byte(`{"model":"m","input":"hi","stream":true}`), nil)
	r := httptest.NewRequest("POST", "/v1/responses", nil)
	r.Header.Set("Authorization", "Bearer agent")
	r.Header.Set("Session-Id", "s1")
	r.Header.Set("X-Codex-Turn-Metadata", "{}")
	r.Header.Set("X-Memctl-Thread", "t")
	up := httptest.NewRequest("POST", "http://up/v1", nil)
	if p := d.Upstream(turn, up, r, "conf"); p != "/responses" || up.Header.Get("Authorization") != "Bearer conf" || up.Header.Get("Accept") != "text/event-stream" ||
		up.Header.Get("Session-Id") != "s1" || up.Header.Get("X-Codex-Turn-Metadata") != "{}" || up.Header.Get("X-Memctl-Thread") != "" {
		t.Errorf("path %s headers %v", p, up.Header)
	}
	up = httptest.NewRequest("POST", "http://up/v1", nil)
	if d.Upstream(turn, up, r, ""); up.Header.Get("Authorization") != "Bearer agent" {
		t.Errorf("headers %v", up.Header)
	}
	r.Header.Set("Session-Id", "s1")
	r.Header.Set("Thread-Id", "t1")
	if d.Thread(r) != "s1" {
		t.Errorf("thread %q", d.Thread(r))
	}
}

// TestParseRefuses: malformed requests name the parameter at fault.
func TestParseRefuses(t *testing.T) {
	for body, param := range map[string]string{
		`{"input":"x"}`:             "model",
		`{"model":"m","input":5}`:   "input",
		`{"model":"m","input":[]}`:  "input",
		`{"model":"m","input":[3]}`: "input[0]",
		`{"model":"m","input":[{"role":"user","content":"a"},{"type":"message","role":"robot","content":"x"}]}`:                           "input[1].role",
		`{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`:                                                            "input[0].call_id",
		`{"model":"m","input":[{"role":"user","content":"a"},{"type":"reasoning"},{"type":"function_call","call_id":"c","arguments":7}]}`: "input[2]",
		`{"model":"m","instructions":3,"input":"x"}`:                                                                                      "instructions",
	} {
		_, err := d.Parse([]byte(body), nil)
		var bad *dialect.BadRequest
		if !errorsAs(err, &bad) || bad.Param != param {
			t.Errorf("%s: %v, want a bad request at %s", body, err, param)
		}
	}
}

func errorsAs(err error, bad **dialect.BadRequest) bool {
	b, ok := err.(*dialect.BadRequest)
	*bad = b
	return ok
}

// TestCompactionAnswerSentBack: the answer of /responses/compact sent back as the agent's
// input parses as two developer messages of the summary, and only the message item goes
// upstream.
func TestCompactionAnswerSentBack(t *testing.T) {
	b, err := d.LocalAnswer(dialect.Compact, dialect.Turn{}, 0, "Summary: it built.")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Object string            `json:"object"`
		Output []json.RawMessage `json:"output"`
	}
	if json.Unmarshal(b, &c); c.Object != "response.compaction" || len(c.Output) != 2 {
		t.Fatalf("%s", b)
	}
	in, _ := json.Marshal(map[string]any{"model": "m", "input": append(c.Output, json.RawMessage(`{"type":"message","role":"user","content":"go on"}`))})
	turn := parse(t, in, nil)
	if len(turn.Messages) != 3 || turn.Messages[0].Text() != "Summary: it built." || turn.Messages[1].Text() != "Summary: it built." || turn.Messages[1].Role != chat.RoleDeveloper {
		t.Fatalf("%+v", turn.Messages)
	}
	active, enc := stored(t, turn.Messages...)
	got, _ := d.Render(turn, active, enc)
	var up struct {
		Input []map[string]any `json:"input"`
	}
	json.Unmarshal(got, &up)
	if len(up.Input) != 2 || up.Input[0]["role"] != "developer" || up.Input[1]["role"] != "user" {
		t.Errorf("upstream input %s", got)
	}
	if _, err := d.LocalAnswer(dialect.CountTokens, dialect.Turn{}, 5, ""); err == nil {
		t.Error("CountTokens answered")
	}
}

// TestRenderMaskedCustomCall: a custom tool's call and its output, the output masked by the
// view, are written as a custom_tool_call and a custom_tool_call_output of the masked text.
func TestRenderMaskedCustomCall(t *testing.T) {
	body := []byte(`{"model":"m","input":[{"type":"message","role":"user","content":"patch it"},{"type":"custom_tool_call","call_id":"c9","name":"apply_patch","input":"*** Begin Patch"},{"type":"custom_tool_call_output","call_id":"c9","output":"Done! a very long output"},{"type":"message","role":"user","content":"next"}]}`)
	turn := parse(t, body, nil)
	if len(turn.Messages) != 4 || turn.Messages[1].ToolCalls[0].Function.Arguments != "*** Begin Patch" || turn.Messages[2].ToolCallID != "c9" {
		t.Fatalf("%+v", turn.Messages)
	}
	active, enc := stored(t, turn.Messages...)
	active[2] = active[2].Marked(&memory.Mark{Masked: &memory.Masked{Seq: 3, Tool: "apply_patch", Digest: "first line: Done!", Tokens: 3},
		Orig: "Done! a very long output"})
	other := parse(t, []byte(`{"model":"m","input":"zzz"}`), nil)
	got, _ := d.Render(other, active, enc)
	want := `{"model":"m","input":[{"type":"message","role":"user","content":"patch it"},{"type":"custom_tool_call","call_id":"c9","name":"apply_patch","input":"*** Begin Patch"},{"call_id":"c9","output":"[tool result masked to save context: call c9 (apply_patch), 0 tokens, 0 bytes, kept in history; digest: first line: Done!]","type":"custom_tool_call_output"},{"type":"message","role":"user","content":"next"}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
