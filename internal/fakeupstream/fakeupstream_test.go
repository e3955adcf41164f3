package fakeupstream

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

type event struct {
	name string
	data map[string]any
}

// post sends body to f's path and returns the status, the content type and the raw answer.
func post(t *testing.T, f *Fake, path, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// parseSSE reads the events of an SSE body; every data line must be JSON whose "type" is the
// event's name.
func parseSSE(t *testing.T, b []byte) []event {
	t.Helper()
	var evs []event
	var name string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data of %s: %v", name, err)
			}
			if d["type"] != name {
				t.Fatalf("event %s has data of type %v", name, d["type"])
			}
			evs = append(evs, event{name, d})
		case line == "":
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return evs
}

func names(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.name)
	}
	return out
}

func num(v any) int { f, _ := v.(float64); return int(f) }

func TestAnthropicStream(t *testing.T) {
	f := NewAnthropic(Options{Reply: Replies(
		Reply{Text: "first"},
		Reply{Thinking: "hmm", Text: "Let me look.", Tool: &ToolCall{Name: "Bash", Input: `{"command":"echo hello, world"}`}},
	)})
	defer f.Close()
	body := `{"model":"claude-x","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	if st, _, b := post(t, f, "/v1/messages?beta=true", body); st != 200 {
		t.Fatalf("first request: %d %s", st, b)
	}
	st, ct, b := post(t, f, "/v1/messages?beta=true", body[:len(body)-2]+`,{"role":"assistant","content":"first"},{"role":"user","content":"go on"}]}`)
	if st != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d, content type %q", st, ct)
	}
	evs := parseSSE(t, b)
	want := []string{"message_start", "ping",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if got := names(evs); !slices.Equal(got, want) {
		t.Fatalf("events %v,\nwant %v", got, want)
	}
	// Put the blocks together as a client does.
	var thinking, signature, text, input string
	var tool map[string]any
	for _, e := range evs {
		switch e.name {
		case "content_block_start":
			if cb := e.data["content_block"].(map[string]any); cb["type"] == "tool_use" {
				tool = cb
			}
		case "content_block_delta":
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "thinking_delta":
				thinking += d["thinking"].(string)
			case "signature_delta":
				signature += d["signature"].(string)
			case "text_delta":
				text += d["text"].(string)
			case "input_json_delta":
				input += d["partial_json"].(string)
			}
		}
	}
	if thinking != "hmm" || signature != "fake-signature-1" || text != "Let me look." || input != `{"command":"echo hello, world"}` {
		t.Fatalf("thinking %q signature %q text %q input %q", thinking, signature, text, input)
	}
	if tool["name"] != "Bash" || tool["id"] != "toolu_fake1" {
		t.Fatalf("tool block %v", tool)
	}
	md := evs[len(evs)-2].data
	if md["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Fatalf("message_delta %v", md)
	}
	// The second request shares its start with the first: that much is read from the cache.
	reqs := f.Requests()
	u := md["usage"].(map[string]any)
	prompt, cached := Tokens(reqs[1].Body), num(u["cache_read_input_tokens"])
	if cached == 0 || num(u["input_tokens"])+cached != prompt || num(u["output_tokens"]) == 0 {
		t.Fatalf("usage %v, prompt %d tokens", u, prompt)
	}
	start := evs[0].data["message"].(map[string]any)
	if start["model"] != "claude-x" || num(start["usage"].(map[string]any)["input_tokens"]) != prompt-cached {
		t.Fatalf("message_start %v", start)
	}
	if len(reqs) != 2 || reqs[1].Path != "/v1/messages" || reqs[1].RawQuery != "beta=true" ||
		reqs[1].Header.Get("X-Api-Key") != "test" || reqs[1].Status != 200 {
		t.Fatalf("recorded %+v", reqs[1])
	}
}

func TestAnthropicJSON(t *testing.T) {
	f := NewAnthropic(Options{Model: "fake", Reply: Replies(Reply{Tool: &ToolCall{ID: "toolu_1", Name: "Read", Input: `{"file_path":"/a"}`}})})
	defer f.Close()
	st, _, b := post(t, f, "/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	var msg struct {
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type, ID, Name string
			Input          map[string]string
		} `json:"content"`
		Usage map[string]int `json:"usage"`
	}
	if err := json.Unmarshal(b, &msg); st != 200 || err != nil {
		t.Fatalf("%d %v %s", st, err, b)
	}
	if msg.Model != "fake" || msg.StopReason != "tool_use" || len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" ||
		msg.Content[0].ID != "toolu_1" || msg.Content[0].Input["file_path"] != "/a" {
		t.Fatalf("message %s", b)
	}
	if msg.Usage["input_tokens"] != Tokens([]byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)) {
		t.Fatalf("usage %v", msg.Usage)
	}
}

func TestAnthropicWindow(t *testing.T) {
	small := `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	f := NewAnthropic(Options{Window: Tokens([]byte(small))})
	defer f.Close()
	if st, _, b := post(t, f, "/v1/messages", small); st != 200 {
		t.Fatalf("at the window: %d %s", st, b)
	}
	big := strings.Replace(small, `"hi"`, `"hi there"`, 1)
	st, ct, b := post(t, f, "/v1/messages", big)
	want := fmt.Sprintf(`{"error":{"message":"prompt is too long: %d tokens > %d maximum","type":"invalid_request_error"},"type":"error"}`+"\n",
		Tokens([]byte(big)), Tokens([]byte(small)))
	if st != 400 || ct != "application/json" || string(b) != want {
		t.Fatalf("over the window: %d %s %s\nwant %s", st, ct, b, want)
	}
	// count_tokens counts, refuses nothing and is no model request.
	st, _, b = post(t, f, "/v1/messages/count_tokens", big)
	if want := fmt.Sprintf(`{"input_tokens":%d}`+"\n", Tokens([]byte(big))); st != 200 || string(b) != want {
		t.Fatalf("count_tokens: %d %s", st, b)
	}
	if st, _, b := post(t, f, "/v1/models", `{}`); st != 404 || !strings.Contains(string(b), "not_found_error") {
		t.Fatalf("unknown route: %d %s", st, b)
	}
	if n, m := len(f.Requests()), len(f.ModelRequests()); n != 4 || m != 2 {
		t.Fatalf("%d requests, %d model requests", n, m)
	}
	if got := f.Requests()[1].Status; got != 400 {
		t.Fatalf("refused request recorded with status %d", got)
	}
}

func TestResponsesStream(t *testing.T) {
	f := NewResponses(Options{Reply: Replies(
		Reply{Thinking: "plan", Text: "Running it.", Tool: &ToolCall{Name: "exec_command", Input: `{"cmd":"echo hello-from-tool"}`}},
	)})
	defer f.Close()
	body := `{"model":"gpt-x","stream":true,"store":false,"instructions":"","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`
	st, ct, b := post(t, f, "/v1/responses", body)
	if st != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d, content type %q: %s", st, ct, b)
	}
	evs := parseSSE(t, b)
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}
	if got := names(evs); !slices.Equal(got, want) {
		t.Fatalf("events %v,\nwant %v", got, want)
	}
	var text, args string
	var done []any
	for i, e := range evs {
		if num(e.data["sequence_number"]) != i {
			t.Fatalf("event %d has sequence_number %v", i, e.data["sequence_number"])
		}
		switch e.name {
		case "response.output_text.delta":
			text += e.data["delta"].(string)
		case "response.function_call_arguments.delta":
			args += e.data["delta"].(string)
		case "response.output_item.done":
			done = append(done, e.data["item"])
		}
	}
	if text != "Running it." || args != `{"cmd":"echo hello-from-tool"}` {
		t.Fatalf("text %q, arguments %q", text, args)
	}
	resp := evs[len(evs)-1].data["response"].(map[string]any)
	out, _ := json.Marshal(resp["output"])
	items, _ := json.Marshal(done)
	if string(out) != string(items) || resp["status"] != "completed" || resp["model"] != "gpt-x" {
		t.Fatalf("completed response %v,\nitems done %s", resp, items)
	}
	fc := done[2].(map[string]any)
	if fc["type"] != "function_call" || fc["call_id"] != "call_fake0" || fc["name"] != "exec_command" {
		t.Fatalf("function call %v", fc)
	}
	if rs := done[0].(map[string]any); rs["type"] != "reasoning" || rs["encrypted_content"] != "fake-encrypted-0" {
		t.Fatalf("reasoning %v", rs)
	}
	u := resp["usage"].(map[string]any)
	if num(u["input_tokens"]) != Tokens([]byte(body)) || num(u["input_tokens_details"].(map[string]any)["cached_tokens"]) != 0 ||
		num(u["total_tokens"]) != num(u["input_tokens"])+num(u["output_tokens"]) {
		t.Fatalf("usage %v", u)
	}
}

func TestResponsesJSONAndWindow(t *testing.T) {
	first := `{"model":"gpt-x","input":"hello"}`
	f := NewResponses(Options{Window: Tokens([]byte(first)) + 1})
	defer f.Close()
	st, _, b := post(t, f, "/v1/responses", first)
	var resp struct {
		Object string `json:"object"`
		Output []struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []struct{ Type, Text string }
		} `json:"output"`
		Usage struct {
			InputTokens        int `json:"input_tokens"`
			InputTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &resp); st != 200 || err != nil {
		t.Fatalf("%d %v %s", st, err, b)
	}
	if resp.Object != "response" || len(resp.Output) != 1 || resp.Output[0].Role != "assistant" ||
		resp.Output[0].Content[0].Type != "output_text" || resp.Output[0].Content[0].Text != "ok" {
		t.Fatalf("response %s", b)
	}
	// Same prompt again: all but the last partial token is cached.
	st, _, b = post(t, f, "/v1/responses", first)
	if err := json.Unmarshal(b, &resp); st != 200 || err != nil || resp.Usage.InputTokensDetails.CachedTokens != len(first)/4 {
		t.Fatalf("second request: %d %v %s", st, err, b)
	}
	st, _, b = post(t, f, "/v1/responses", `{"model":"gpt-x","input":"hello, wonderful world"}`)
	want := `{"error":{"code":"context_length_exceeded","message":"` + ContextWindowMessage + `","param":"input","type":"invalid_request_error"}}` + "\n"
	if st != 400 || string(b) != want {
		t.Fatalf("over the window: %d %s\nwant %s", st, b, want)
	}
	if st, _, b := post(t, f, "/v1/models", ``); st != 404 || !strings.Contains(string(b), `"error"`) {
		t.Fatalf("unknown route: %d %s", st, b)
	}
}

func TestRaw(t *testing.T) {
	f := NewResponses(Options{Reply: Replies(Reply{Raw: &Raw{Status: 503, Body: `{"error":{"message":"busy"}}`}}, Reply{Text: "back"})})
	defer f.Close()
	if st, _, b := post(t, f, "/v1/responses", `{"input":"a"}`); st != 503 || string(b) != `{"error":{"message":"busy"}}` {
		t.Fatalf("raw: %d %s", st, b)
	}
	if _, _, b := post(t, f, "/v1/responses", `{"input":"a"}`); !strings.Contains(string(b), `"back"`) {
		t.Fatalf("after the raw answer: %s", b)
	}
}

func TestChunks(t *testing.T) {
	s := strings.Repeat("é", 20) + "abc"
	parts := chunks(s, 16)
	if strings.Join(parts, "") != s {
		t.Fatalf("chunks %q", parts)
	}
	for _, p := range parts {
		if len(p) > 16 || !utf8Valid(p) {
			t.Fatalf("chunk %q", p)
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
