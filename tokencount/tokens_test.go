package tokencount_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/tokentest"
	"github.com/memcascade/memcascade/tokencount"
)

func named(role, name, text string) chat.Message {
	m := chat.TextMessage(role, text)
	m.Name = name
	return m
}

// The "corporate jargon" messages of the cookbook's section 6.
var cookbookMessages = []chat.Message{
	chat.TextMessage("system", "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."),
	named("system", "example_user", "New synergies will help drive top-line growth."),
	named("system", "example_assistant", "Things working well together will increase revenue."),
	named("system", "example_user", "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."),
	named("system", "example_assistant", "Let's talk later when we're less busy about how to do better."),
	chat.TextMessage("user", "This late pivot means we don't have time to boil the ocean for the client deliverable."),
}

// TestCountMessagesCookbook checks the figures the OpenAI API reported in the cookbook.
func TestCountMessagesCookbook(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		encoding string
		want     int
	}{
		{tokencount.EncodingCL100k, 129}, // gpt-4, gpt-3.5-turbo
		{tokencount.EncodingO200k, 124},  // gpt-4o, gpt-4o-mini
	} {
		if got := tokentest.Counter(t, tc.encoding).CountMessages(cookbookMessages); got != tc.want {
			t.Errorf("%s: CountMessages = %d, want %d", tc.encoding, got, tc.want)
		}
	}
}

// The tools example of the cookbook's section 7, as JSON.
const cookbookTools = `[{
	"type": "function",
	"function": {
		"name": "get_current_weather",
		"description": "Get the current weather in a given location",
		"parameters": {
			"type": "object",
			"properties": {
				"location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
				"unit": {"type": "string", "description": "The unit of temperature to return", "enum": ["celsius", "fahrenheit"]}
			},
			"required": ["location"]
		}
	}
}]`

// TestCountToolsCookbook checks messages plus tools against the API's figures in the cookbook.
func TestCountToolsCookbook(t *testing.T) {
	t.Parallel()
	var tools []chat.Tool
	if err := json.Unmarshal([]byte(cookbookTools), &tools); err != nil {
		t.Fatal(err)
	}
	messages := []chat.Message{
		chat.TextMessage("system", "You are a helpful assistant that can answer to questions about the weather."),
		chat.TextMessage("user", "What's the weather like in San Francisco?"),
	}
	for _, tc := range []struct {
		encoding string
		want     int
	}{
		{tokencount.EncodingCL100k, 105}, // gpt-4, gpt-3.5-turbo
		{tokencount.EncodingO200k, 101},  // gpt-4o, gpt-4o-mini
	} {
		c := tokentest.Counter(t, tc.encoding)
		if got := c.CountMessages(messages) + c.CountTools(tools); got != tc.want {
			t.Errorf("%s: CountMessages+CountTools = %d, want %d", tc.encoding, got, tc.want)
		}
	}
}

func TestEncodingHelloWorld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		encoding string
		want     []int
	}{
		{tokencount.EncodingCL100k, []int{15339, 1917}},
		{tokencount.EncodingO200k, []int{24912, 2375}},
	} {
		c := tokentest.Counter(t, tc.encoding)
		if got := c.Encode("hello world"); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Encode = %v, want %v", tc.encoding, got, tc.want)
		}
		if got := c.CountText("hello world"); got != 2 {
			t.Errorf("%s: CountText = %d, want 2", tc.encoding, got)
		}
		if got := c.Encoding(); got != tc.encoding {
			t.Errorf("Encoding() = %q, want %q", got, tc.encoding)
		}
	}
}

// TestCountTextSpecialTokens checks special-token text is counted as ordinary text: no panic, no
// special token id, several tokens.
func TestCountTextSpecialTokens(t *testing.T) {
	t.Parallel()
	const text = "a <|endoftext|> b <|fim_prefix|><|endofprompt|>"
	for _, tc := range []struct {
		encoding  string
		endOfText int
	}{
		{tokencount.EncodingCL100k, 100257},
		{tokencount.EncodingO200k, 199999},
	} {
		c := tokentest.Counter(t, tc.encoding)
		tokens := c.Encode("<|endoftext|>")
		if len(tokens) < 2 || slices.Contains(tokens, tc.endOfText) {
			t.Errorf("%s: Encode(<|endoftext|>) = %v, want ordinary text tokens", tc.encoding, tokens)
		}
		if got := c.CountText(text); got < 10 {
			t.Errorf("%s: CountText(%q) = %d, want at least 10", tc.encoding, text, got)
		}
	}
}

func TestResolveEncoding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model, override string
		want            string
		known           bool
	}{
		{"gpt-4o", "", tokencount.EncodingO200k, true},
		{"gpt-4o-mini-2024-07-18", "", tokencount.EncodingO200k, true},
		{"chatgpt-4o-latest", "", tokencount.EncodingO200k, true},
		{"gpt-4.1-nano", "", tokencount.EncodingO200k, true},
		{"gpt-4.5-preview", "", tokencount.EncodingO200k, true},
		{"gpt-5", "", tokencount.EncodingO200k, true},
		{"gpt-5-mini", "", tokencount.EncodingO200k, true},
		{"o1-preview", "", tokencount.EncodingO200k, true},
		{"o3-mini", "", tokencount.EncodingO200k, true},
		{"o4-mini", "", tokencount.EncodingO200k, true},
		{"openai/gpt-4o", "", tokencount.EncodingO200k, true},
		{"azure/openai/GPT-4o", "", tokencount.EncodingO200k, true},
		{"gpt-4", "", tokencount.EncodingCL100k, true},
		{"gpt-4-0613", "", tokencount.EncodingCL100k, true},
		{"gpt-4-turbo-2024-04-09", "", tokencount.EncodingCL100k, true},
		{"gpt-4-32k", "", tokencount.EncodingCL100k, true},
		{"gpt-3.5-turbo", "", tokencount.EncodingCL100k, true},
		{"openai/gpt-3.5-turbo-0125", "", tokencount.EncodingCL100k, true},
		{"text-embedding-3-small", "", tokencount.EncodingCL100k, true},
		{"text-embedding-ada-002", "", tokencount.EncodingCL100k, true},
		{"claude-3-5-sonnet", "", tokencount.EncodingO200k, false},
		{"gpt-4x", "", tokencount.EncodingO200k, false},
		{"", "", tokencount.EncodingO200k, false},
		{"gpt-4o", tokencount.EncodingCL100k, tokencount.EncodingCL100k, true},
		{"claude-3-5-sonnet", tokencount.EncodingCL100k, tokencount.EncodingCL100k, true},
		{"gpt-4", tokencount.EncodingO200k, tokencount.EncodingO200k, true},
		{"gpt-4o", tokencount.EncodingP50k, tokencount.EncodingP50k, true},
		{"llama3", tokencount.EncodingR50k, tokencount.EncodingR50k, true},
	} {
		got, known, err := tokencount.ResolveEncoding(tc.model, tc.override)
		if err != nil || got != tc.want || known != tc.known {
			t.Errorf("ResolveEncoding(%q, %q) = %q, %v, %v; want %q, %v, nil",
				tc.model, tc.override, got, known, err, tc.want, tc.known)
		}
	}
	_, _, err := tokencount.ResolveEncoding("gpt-4o", "p60k_base")
	if err == nil || !strings.Contains(err.Error(), "p60k_base") {
		t.Errorf("bad override: err = %v, want an error naming p60k_base", err)
	}
}

func TestNewCounterUnknownEncoding(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "p60k_base", "O200K_BASE", "file:0123456789abcdef", "gpt-4o"} {
		if c, err := tokencount.NewCounter(name); err == nil {
			t.Errorf("NewCounter(%q) = %v, nil; want an error", name, c)
		}
	}
}

// TestNewCounterIsLazy runs itself in a fresh process, where no encoding is loaded yet, and
// checks by heap allocation that NewCounter does not load the encoding and the first count
// does.
func TestNewCounterIsLazy(t *testing.T) {
	t.Parallel()
	const env = "MEMCASCADE_TOKENS_LAZY_CHILD"
	if os.Getenv(env) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNewCounterIsLazy$", "-test.v")
		cmd.Env = append(os.Environ(), env+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestNewCounterIsLazy") {
			t.Fatalf("child process: %v\n%s", err, out)
		}
		return
	}
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var c *tokencount.BPECounter
	if n := allocated(func() { c = tokentest.Counter(t, tokencount.EncodingCL100k) }); n > 64<<10 {
		t.Errorf("NewCounter allocated %d bytes; it must not load the encoding", n)
	}
	if n := allocated(func() { c.CountText("hello world") }); n < 10<<20 {
		t.Errorf("first CountText allocated %d bytes; it should have loaded the encoding", n)
	}
	if n := allocated(func() { tokentest.Counter(t, tokencount.EncodingCL100k).CountText("hello world") }); n > 64<<10 {
		t.Errorf("a second counter's first CountText allocated %d bytes; the encoding must load once per process", n)
	}
}

// TestCountTextDoesNotReload is not parallel: AllocsPerRun counts every goroutine's allocations.
func TestCountTextDoesNotReload(t *testing.T) {
	c := tokentest.Counter(t, tokencount.EncodingO200k)
	c.CountText("warm up")
	allocs := testing.AllocsPerRun(20, func() {
		tokencount.NewCounter(tokencount.EncodingO200k)
		c.CountText("hello world, how are you?")
	})
	if allocs > 200 {
		t.Errorf("NewCounter+CountText made %v allocations per run; the encoding is being reloaded", allocs)
	}
}

func textOf(c *tokencount.BPECounter, parts ...string) int {
	n := 0
	for _, p := range parts {
		n += c.CountText(p)
	}
	return n
}

func TestCountMessageRules(t *testing.T) {
	t.Parallel()
	for _, enc := range []string{tokencount.EncodingCL100k, tokencount.EncodingO200k} {
		c := tokentest.Counter(t, enc)
		check := func(what string, m chat.Message, want int) {
			t.Helper()
			if got := c.CountMessage(m); got != want {
				t.Errorf("%s: %s: CountMessage = %d, want %d", enc, what, got, want)
			}
		}
		text := "The quick brown fox jumps over the lazy dog."
		check("string content", chat.TextMessage("user", text), 3+textOf(c, "user", text))
		check("null content", chat.Message{Role: "assistant", Content: json.RawMessage("null")}, 3+textOf(c, "assistant"))
		check("absent content", chat.Message{Role: "assistant"}, 3+textOf(c, "assistant"))
		check("name", named("tool", "get_user_details", text), 3+textOf(c, "tool", text, "get_user_details")+1)
		check("tool_call_id", chat.Message{Role: "tool", Content: json.RawMessage(`"ok"`), ToolCallID: "call_abc123"},
			3+textOf(c, "tool", "ok", "call_abc123"))

		other := `{"type":"video_url","video_url":{"url":"https://example.com/a.mp4"}}`
		parts := `[{"type":"text","text":"first part"},
			{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"high"}},
			{"type":"text","text":"second part"},
			` + other + `]`
		check("content parts", chat.Message{Role: "user", Content: json.RawMessage(parts)},
			3+textOf(c, "user", "first part", "second part", other)+85)

		args := `{"user_id":"sara_doe_496","reservation_id":"ZFA04Y"}`
		call := chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{
			{ID: "call_1", Type: "function", Function: chat.FunctionCall{Name: "get_reservation_details", Arguments: args}},
			{ID: "call_2_with_a_long_id_that_is_not_counted", Type: "function", Function: chat.FunctionCall{Name: "think", Arguments: "{}"}},
		}}
		check("tool calls", call, 3+textOf(c, "assistant", "get_reservation_details", args, "think", "{}")+2*3)

		extra := chat.TextMessage("user", text)
		extra.Extra = map[string]json.RawMessage{"refusal": json.RawMessage(`"a long field that is not counted"`)}
		check("extra", extra, 3+textOf(c, "user", text))

		ms := []chat.Message{chat.TextMessage("user", text), call}
		if got, want := c.CountMessages(ms), c.CountMessage(ms[0])+c.CountMessage(ms[1])+tokencount.ReplyPriming; got != want {
			t.Errorf("%s: CountMessages = %d, want %d", enc, got, want)
		}
		if got := c.CountMessages(nil); got != tokencount.ReplyPriming {
			t.Errorf("%s: CountMessages(nil) = %d, want %d", enc, got, tokencount.ReplyPriming)
		}
	}
}

func tool(name, desc, params string) chat.Tool {
	return chat.Tool{Type: "function", Function: chat.ToolFunction{Name: name, Description: desc, Parameters: json.RawMessage(params)}}
}

func TestCountToolsRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		encoding string
		funcInit int
	}{
		{tokencount.EncodingCL100k, 10},
		{tokencount.EncodingO200k, 7},
	} {
		c := tokentest.Counter(t, tc.encoding)
		check := func(what string, tools []chat.Tool, want int) {
			t.Helper()
			if got := c.CountTools(tools); got != want {
				t.Errorf("%s: %s: CountTools = %d, want %d", tc.encoding, what, got, want)
			}
		}
		fi := tc.funcInit
		check("no tools", nil, 0)
		check("no parameters", []chat.Tool{tool("think", "Think.", "")},
			fi+textOf(c, "think:Think")+12)
		check("empty properties", []chat.Tool{tool("think", "Think", `{"type":"object","properties":{}}`)},
			fi+textOf(c, "think:Think")+12)
		check("two tools, one func_end",
			[]chat.Tool{tool("a", "Do a.", ""), tool("b", "Do b..", `{"properties":{"x":{"type":"integer"}}}`)},
			fi+textOf(c, "a:Do a")+fi+textOf(c, "b:Do b.")+3+3+textOf(c, "x:integer:")+12)
		check("type list and missing type",
			[]chat.Tool{tool("f", "F", `{"properties":{"x":{"type":["string","null"],"description":"X."},"y":{"description":"Y"}}}`)},
			fi+textOf(c, "f:F")+3+3+textOf(c, "x:string,null:X")+3+textOf(c, "y::Y")+12)
		check("enum with non-string values",
			[]chat.Tool{tool("f", "F", `{"properties":{"n":{"type":"integer","enum":[1,2,"three"]}}}`)},
			fi+textOf(c, "f:F")+3+3+textOf(c, "n:integer:")-3+3+textOf(c, "1")+3+textOf(c, "2")+3+textOf(c, "three")+12)
		check("nested object",
			[]chat.Tool{tool("f", "F", `{"properties":{"addr":{"type":"object","description":"Address.",
				"properties":{"city":{"type":"string","description":"City."},"zip":{"type":"string"}}}}}`)},
			fi+textOf(c, "f:F")+3+3+textOf(c, "addr:object:Address")+3+3+textOf(c, "city:string:City")+3+textOf(c, "zip:string:")+12)
		check("array of objects and array of enums",
			[]chat.Tool{tool("f", "F", `{"properties":{
				"flights":{"type":"array","description":"Flights.","items":{"type":"object","properties":{"date":{"type":"string","description":"Date."}}}},
				"cabins":{"type":"array","items":{"type":"string","enum":["economy","business"]}}}}`)},
			fi+textOf(c, "f:F")+3+
				3+textOf(c, "flights:array:Flights")+3+3+textOf(c, "date:string:Date")+
				3+textOf(c, "cabins:array:")-3+3+textOf(c, "economy")+3+textOf(c, "business")+12)
		check("invalid parameters", []chat.Tool{tool("f", "F", `{"properties":[1,2]}`)}, fi+textOf(c, "f:F")+12)
	}
}

// TestCountToolsRealSchemas counts the tau-bench airline tools, whose schemas have arrays of
// objects and enums, and checks func_end is added once for the whole list.
func TestCountToolsRealSchemas(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../testdata/conversations/tau_bench_airline_tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var tools []chat.Tool
	if err := json.Unmarshal(b, &tools); err != nil {
		t.Fatal(err)
	}
	if len(tools) < 2 {
		t.Fatalf("read %d tools, want several", len(tools))
	}
	c := tokentest.Counter(t, tokencount.EncodingO200k)
	all, sum := c.CountTools(tools), 0
	for _, tl := range tools {
		one := c.CountTools([]chat.Tool{tl})
		if one <= 7+12 {
			t.Errorf("tool %s counts %d, want more than the fixed costs", tl.Function.Name, one)
		}
		sum += one
	}
	if want := sum - 12*(len(tools)-1); all != want {
		t.Errorf("CountTools(all) = %d, want %d (func_end once)", all, want)
	}
}

func TestCounterConcurrent(t *testing.T) {
	t.Parallel()
	ms := corpus.ReadMessagesFile(t, corpus.Airline)
	for _, enc := range []string{tokencount.EncodingCL100k, tokencount.EncodingO200k} {
		want := tokentest.Counter(t, enc).CountMessages(ms)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if got := tokentest.Counter(t, enc).CountMessages(ms); got != want {
					t.Errorf("%s: concurrent CountMessages = %d, want %d", enc, got, want)
				}
			})
		}
		wg.Wait()
	}
}

func BenchmarkCountText(b *testing.B) {
	system := corpus.ReadMessagesFile(b, corpus.Airline)[0].Text()
	for _, enc := range []string{tokencount.EncodingO200k, tokencount.EncodingCL100k} {
		b.Run(enc, func(b *testing.B) {
			c := tokentest.Counter(b, enc)
			c.CountText("load") // load the encoding outside the timing
			b.SetBytes(int64(len(system)))
			b.ReportAllocs()
			for b.Loop() {
				c.CountText(system)
			}
		})
	}
}
