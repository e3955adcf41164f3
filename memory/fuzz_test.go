package memory_test

// Fuzz targets of the store. `go test ./memory` runs their seeds (the f.Add calls below and
// memory/testdata/fuzz/<Target>/); `go test ./memory -run XXX -fuzz FuzzImport` (or FuzzSearch)
// explores further. Helpers here carry an fz prefix so they never
// collide with the package's other test helpers.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// fzSeedThread is imported before the fuzz input into an existing thread; it leaves the call
// "open-1" unanswered, so an input may answer it.
const fzSeedThread = `{"role":"system","content":"You are terse."}
{"role":"user","content":"look it up"}
{"role":"assistant","content":null,"tool_calls":[{"id":"open-1","type":"function","function":{"name":"lookup","arguments":"{}"}}]}
`

// fzImportSeeds are inputs of every shape the importer reads, and of every kind of bad input.
var fzImportSeeds = []string{
	// Valid: JSONL, an array, an object, blank lines, CRLF, a BOM, fields kept as given.
	`{"role":"user","content":"hi"}`,
	"\xef\xbb\xbf{\"role\":\"user\",\"content\":\"bom\"}\r\n\r\n{\"role\":\"assistant\",\"content\":\"ok\"}\r\n",
	`[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"parts"},{"type":"image_url","image_url":{"url":"data:x"}}]}]`,
	`{"messages": [{"role":"developer","content":"d"},{"role":"user","content":"u","name":"ann","x-extra":{"k":[1,2.50,1e3]}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"[]"}}]}
{"role":"tool","tool_call_id":"b","content":"B"}
{"role":"tool","tool_call_id":"a","content":"A","name":"f"}
{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}
{"role":"tool","tool_call_id":"a","content":"again"}`,
	`{"role":"tool","tool_call_id":"open-1","content":"answers the seed thread's open call"}`,
	`{"role":"user","content":"escapes \u00e9\ud83d\ude00 \"q\" \\ \u0000 <|endoftext|>"}`,
	`{"role":"assistant","content":"","refusal":null,"tool_calls":null,"reasoning_content":"r"}`,
	// Named fields given as null or empty, absent or extra fields of a call: kept as given.
	`{"role":"user","content":"x","name":null}`,
	`{"role":"user","content":"x","name":""}`,
	`{"role":"user","content":"x","tool_call_id":null}`,
	`{"role":"user","content":"x","tool_call_id":""}`,
	`{"role":"user","content":"x","tool_calls":[]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f"}}]}
{"role":"tool","tool_call_id":"a","content":"A"}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":null,"function":{"name":"f","arguments":null,"strict":true}}]}
{"role":"tool","tool_call_id":"a","content":"A"}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"","function":{"name":"f","arguments":"","parsed":{"q":1}},"index":0}]}
{"role":"tool","tool_call_id":"a","content":"A"}`,
	// Bad: empty, no message, malformed, not objects, invalid UTF-8, roles, tool calls.
	``,
	"  \n\t\n",
	`[]`,
	`{"messages": []}`,
	`{"messages": [{"role":"user","content":"x"}]`,
	`[{"role":"user","content":"x"}] trailing`,
	`{"messages": [{"role":"user","content":"x"}]} {"role":"user"}`,
	`{"role":"user","content":"x"`,
	`{"role":"user","content":"x"} {"role":"user","content":"y"}`,
	`null`,
	`[null]`,
	`[1, "two"]`,
	`"just a string"`,
	"{\"role\":\"user\",\"content\":\"\xff\xfe\"}",
	"\u00a0{\"role\":\"user\",\"content\":\"nbsp\"}",
	"{\"role\":\"user\",\"content\":\"x\"}\n\u00a0{\"role\":\"user\",\"content\":\"nbsp\"}\u2028\n",
	`{"messages": [{"role":"user","content":"x"}], "tools": [{"type":"function"}]}`,
	`{"messages": [{"role":"user","content":"x"}], "messages": []}`,
	`{"messages": [{"role":"user","content":"x"}], "tools": [}`,
	`{"role":"robot","content":"x"}`,
	`{"content":"no role"}`,
	`{"role":"user","content":42}`,
	`{"role":"user","content":"x","name":7}`,
	`{"role":"tool","tool_call_id":"nobody","content":"orphan"}`,
	`{"role":"tool","content":"no id"}`,
	`{"role":"user","content":"x","tool_call_id":"a"}`,
	`{"role":"user","content":"x","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"open-1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"arguments":"{}"}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{"obj":1}}}]}`,
	`{"role":"user","content":"ok"}
{"role":"user","content":"then bad"
{"role":"user","content":"never"}`,
}

func FuzzImport(f *testing.F) {
	for _, s := range fzImportSeeds {
		f.Add([]byte(s))
	}
	for _, file := range corpus.Conversations(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		// The first messages (small inputs mutate faster) as JSONL, a JSON array and an object.
		var msgs []json.RawMessage
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 && len(msgs) < 8 {
				msgs = append(msgs, line)
			}
		}
		var head []byte
		for _, m := range msgs[1:] {
			head = append(append(head, m...), '\n')
		}
		f.Add(head)
		arr, _ := json.Marshal(msgs)
		f.Add(arr)
		f.Add([]byte(`{"messages": ` + string(arr) + `}`))
	}
	// One store per process (a fresh file per input would make the fuzzer wait on the disk):
	// each input gets two threads of its own, deleted afterwards.
	ctx := context.Background()
	s, err := memory.Open(ctx, testdb.Name(f, "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	var inputs atomic.Int64
	f.Fuzz(func(t *testing.T, data []byte) {
		n := inputs.Add(1)
		newThread, oldThread := fmt.Sprintf("new-%d", n), fmt.Sprintf("old-%d", n)
		defer func() {
			for _, th := range []string{newThread, oldThread} {
				if err := s.DeleteThread(ctx, th); err != nil && !errors.Is(err, memory.ErrThreadNotFound) {
					t.Fatal(err)
				}
			}
		}()
		want, oracleErr := fzParseInput(data)

		// Into a new thread: all of it or nothing, and the thread does not exist after a failure.
		_, err := s.Import(ctx, newThread, bytes.NewReader(data), memory.AppendOptions{})
		fzCheckImport(t, s, newThread, nil, want, oracleErr, err)

		// Into an existing thread with an open call: unchanged after a failure.
		if _, err := s.Import(ctx, oldThread, strings.NewReader(fzSeedThread), memory.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		before := fzHistory(t, s, oldThread)
		_, err = s.Import(ctx, oldThread, bytes.NewReader(data), memory.AppendOptions{})
		fzCheckImport(t, s, oldThread, before, want, oracleErr, err)
	})
}

// fzCheckImport checks the outcome of importing want (the input's messages, or oracleErr when
// the input is not a well-formed list of JSON objects) into thread, which held before.
func fzCheckImport(t *testing.T, s *memory.Store, thread string, before, want []any, oracleErr, err error) {
	t.Helper()
	ctx := context.Background()
	if err != nil {
		var ie *memory.InputError
		if !errors.As(err, &ie) {
			t.Fatalf("import into %s failed with %T, want *memory.InputError: %v", thread, err, err)
		}
		if before == nil {
			if _, herr := s.History(ctx, thread); !errors.Is(herr, memory.ErrThreadNotFound) {
				t.Fatalf("thread %s exists after a failed import (%v): %v", thread, err, herr)
			}
			return
		}
		if got := fzHistory(t, s, thread); !reflect.DeepEqual(got, before) {
			t.Fatalf("thread %s changed by a failed import (%v)", thread, err)
		}
		if _, aerr := s.Active(ctx, thread); aerr != nil {
			t.Fatalf("active context of %s after a failed import: %v", thread, aerr)
		}
		// The rejection must have a reason the spec lists, or a problem with a named field.
		if oracleErr == nil && fzClearlyValid(want, before) {
			t.Fatalf("import into %s rejected input that is valid: %v", thread, err)
		}
		return
	}
	if oracleErr != nil {
		t.Fatalf("import into %s accepted input that is not a list of JSON messages (%v)", thread, oracleErr)
	}
	if why := fzSpecViolation(want, before); why != "" {
		t.Fatalf("import into %s accepted input the spec rejects: %s", thread, why)
	}
	got := fzHistory(t, s, thread)
	wantAll := append(append([]any{}, before...), want...)
	if !reflect.DeepEqual(got, wantAll) {
		g, _ := json.Marshal(got[len(before):])
		w, _ := json.Marshal(want)
		t.Fatalf("history of %s differs from the input\n got: %s\nwant: %s", thread, g, w)
	}
	hist, herr := s.History(ctx, thread)
	if herr != nil {
		t.Fatal(herr)
	}
	for i, e := range hist {
		if e.Seq != int64(i+1) {
			t.Fatalf("thread %s: entry %d has seq %d", thread, i, e.Seq)
		}
	}
	a, aerr := s.Active(ctx, thread)
	if aerr != nil {
		t.Fatalf("active context of %s: %v", thread, aerr)
	}
	if len(a.Entries) != len(hist) {
		t.Fatalf("active context of %s has %d entries, history %d (never compacted)", thread, len(a.Entries), len(hist))
	}
}

// fzHistory returns a thread's history, each message re-marshalled and normalised.
func fzHistory(t *testing.T, s *memory.Store, thread string) []any {
	t.Helper()
	hist, err := s.History(context.Background(), thread)
	if err != nil {
		t.Fatalf("history of %s: %v", thread, err)
	}
	out := make([]any, len(hist))
	for i, e := range hist {
		b, err := json.Marshal(e.Message)
		if err != nil {
			t.Fatalf("marshal message %d of %s: %v", e.Seq, thread, err)
		}
		if out[i], err = fzNormalize(b); err != nil {
			t.Fatalf("message %d of %s re-marshals to bad JSON %s: %v", e.Seq, thread, b, err)
		}
	}
	return out
}

// fzNormalize parses one JSON value; numbers keep their literal text.
func fzNormalize(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

// fzParseInput reads an import file independently of the importer: a JSON array of objects,
// an object whose first key is "messages" holding such an array, or JSONL (one object per
// non-blank line). It returns the normalised messages, or why the input is not one of these.
func fzParseInput(data []byte) ([]any, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("invalid UTF-8")
	}
	body := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	var list []any
	switch {
	case len(trimmed) == 0:
		return nil, errors.New("empty")
	case trimmed[0] == '[':
		v, err := fzNormalize(trimmed)
		if err != nil {
			return nil, err
		}
		list, _ = v.([]any)
	case trimmed[0] == '{' && fzFirstKeyIsMessages(trimmed):
		v, err := fzNormalize(trimmed)
		if err != nil {
			return nil, err
		}
		obj := v.(map[string]any)
		arr, ok := obj["messages"].([]any)
		if !ok {
			return nil, errors.New(`"messages" is not an array`)
		}
		list = arr
	default:
		for line := range bytes.SplitSeq(body, []byte("\n")) {
			line = bytes.Trim(line, " \t\r\n")
			if len(line) == 0 {
				continue
			}
			v, err := fzNormalize(line)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
	}
	if len(list) == 0 {
		return nil, errors.New("no message")
	}
	for i, m := range list {
		if _, ok := m.(map[string]any); !ok {
			return nil, fmt.Errorf("message %d is not an object", i)
		}
	}
	return list, nil
}

// fzFirstKeyIsMessages reports whether a JSON object's first key is "messages".
func fzFirstKeyIsMessages(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	tok, err := dec.Token()
	return err == nil && tok == "messages"
}

// fzMsg is the part of a normalised message the spec's rules look at.
type fzMsg struct {
	role, toolCallID string
	hasCallID        bool
	calls            []string // tool-call ids
}

func fzFields(m any) fzMsg {
	o := m.(map[string]any)
	var r fzMsg
	r.role, _ = o["role"].(string)
	r.toolCallID, r.hasCallID = o["tool_call_id"].(string)
	if calls, ok := o["tool_calls"].([]any); ok {
		for _, c := range calls {
			if co, ok := c.(map[string]any); ok {
				id, _ := co["id"].(string)
				r.calls = append(r.calls, id)
			}
		}
	}
	return r
}

// fzSpecViolation checks accepted messages against the import rules (memory/validate.go): a known
// role, a tool message answers an unanswered call, no call id repeated while unanswered, no
// message but a tool result while a call is unanswered.
func fzSpecViolation(msgs, before []any) string {
	open := map[string]bool{}
	for i, m := range append(append([]any{}, before...), msgs...) {
		f := fzFields(m)
		switch f.role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return fmt.Sprintf("message %d: role %q", i, f.role)
		}
		if f.role == "tool" {
			if !open[f.toolCallID] {
				return fmt.Sprintf("message %d: tool result %q answers no unanswered call", i, f.toolCallID)
			}
			delete(open, f.toolCallID)
		} else if len(open) > 0 {
			return fmt.Sprintf("message %d: a %s message while a call is unanswered", i, f.role)
		}
		for _, id := range f.calls {
			if open[id] {
				return fmt.Sprintf("message %d: call id %q repeated while unanswered", i, id)
			}
			open[id] = true
		}
	}
	return ""
}

// fzClearlyValid reports whether msgs are plainly valid: the usual OpenAI shapes (string or
// null content, well-formed tool calls, string names) that follow the rules. The importer must
// accept these.
func fzClearlyValid(msgs, before []any) bool {
	if fzSpecViolation(msgs, before) != "" {
		return false
	}
	isString := func(v any) bool { _, ok := v.(string); return ok }
	for _, m := range msgs {
		o := m.(map[string]any)
		role := o["role"].(string)
		for k, v := range o {
			switch k {
			case "role":
			case "content":
				if v != nil && !isString(v) {
					return false
				}
			case "name":
				if !isString(v) {
					return false
				}
			case "tool_call_id":
				if role != "tool" || !isString(v) || v == "" {
					return false
				}
			case "tool_calls":
				calls, ok := v.([]any)
				if !ok || role != "assistant" {
					return false
				}
				for _, c := range calls {
					co, ok := c.(map[string]any)
					if !ok || !isString(co["id"]) || co["id"] == "" || !isString(co["type"]) {
						return false
					}
					fn, ok := co["function"].(map[string]any)
					if !ok || !isString(fn["name"]) || fn["name"] == "" || !isString(fn["arguments"]) {
						return false
					}
				}
			}
		}
		if role == "tool" && !isString(o["tool_call_id"]) {
			return false
		}
		// Content may be missing or null only on an assistant message that calls tools or
		// refuses (a non-empty string refusal).
		refusal, _ := o["refusal"].(string)
		if calls, _ := o["tool_calls"].([]any); !isString(o["content"]) && (role != "assistant" || len(calls) == 0 && refusal == "") {
			return false
		}
		// No identifier may hold a NUL character (neither backend stores one).
		for _, id := range fzIdentifiers(o) {
			if strings.ContainsRune(id, 0) {
				return false
			}
		}
	}
	return true
}

// fzIdentifiers returns the identifiers of message o: its name, tool_call_id, and each call's
// id and function name.
func fzIdentifiers(o map[string]any) []string {
	var ids []string
	for _, k := range []string{"name", "tool_call_id"} {
		if v, ok := o[k].(string); ok {
			ids = append(ids, v)
		}
	}
	calls, _ := o["tool_calls"].([]any)
	for _, c := range calls {
		co, _ := c.(map[string]any)
		fn, _ := co["function"].(map[string]any)
		for _, v := range []any{co["id"], fn["name"]} {
			if id, ok := v.(string); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// fzSearchStore builds the store FuzzSearch queries: three conversations, one of them compacted
// so that summaries are searched too.
// It fails the fuzz target when the recorded conversations are missing: the compacted data is
// what the seeds search.
func fzSearchStore(f *testing.F) (*memory.Store, error) {
	ctx := context.Background()
	s, err := memory.Open(ctx, testdb.Name(f, "search.db"))
	if err != nil {
		return nil, err
	}
	files := corpus.Conversations(f)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if _, err := s.Import(ctx, filepath.Base(file), bytes.NewReader(data), memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			return nil, err
		}
	}
	odd := []chat.Message{
		chat.TextMessage("user", `quotes "a" 'b' and AND OR NOT NEAR(x y) col:z * ^ - + ( ) {c} Ünïcödé 日本語 🙂`),
		chat.TextMessage("assistant", "nul\x00byte and <|endoftext|>"),
	}
	if _, err := s.Append(ctx, "odd", odd, memory.AppendOptions{}); err != nil {
		return nil, err
	}
	c := compact.New(s, storetest.ExtractiveCascade(f, s), compact.Settings{TokenLimit: 6000, SummaryMaxTokens: 500})
	if _, err := c.Compact(ctx, filepath.Base(files[0]), compact.Options{Force: true}); err != nil {
		return nil, err
	}
	return s, nil
}

func FuzzSearch(f *testing.F) {
	for _, q := range []string{
		"", " ", "reservation", "flight cancel", `"`, `""`, `a"b`, `"unterminated`, "AND", "a OR b", "NOT x",
		"NEAR(a b)", "*", "a*", "^a", "-a", "+a", "col:x", "body:x", "(", ")", "{a b}", "'", "\x00", "a\x00b",
		"\xff\xfe", "Ünïcödé", "日本語", "🙂", "<|endoftext|>", "Summary earlier", strings.Repeat("x ", 300),
		"\u0301", "ꙮ", "a\u200bb", "ǅ", "\t\n\r",
	} {
		f.Add(q, "", uint8(0))
		f.Add(q, "odd", uint8(3))
	}
	s, err := fzSearchStore(f)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, query, thread string, limit uint8) {
		hits, err := s.Search(context.Background(), query, memory.SearchOptions{Thread: thread, Limit: int(limit)})
		if errors.Is(err, memory.ErrQueryTooLong) {
			return
		}
		if err != nil {
			t.Fatalf("search %q (thread %q, limit %d): %v", query, thread, limit, err)
		}
		max := int(limit)
		if max == 0 {
			max = memory.DefaultSearchLimit
		}
		if len(hits) > max {
			t.Fatalf("search %q: %d hits, limit %d", query, len(hits), max)
		}
		for _, h := range hits {
			if h.Thread == "" || (thread != "" && h.Thread != thread) {
				t.Fatalf("search %q in thread %q: hit in thread %q", query, thread, h.Thread)
			}
		}
	})
}
