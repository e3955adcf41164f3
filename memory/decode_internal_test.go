package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/jsontext"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/tokencount"
)

// decodeSeeds are messages of every shape decodeFast reads, and inputs it must leave to
// decodeMessage.
var decodeSeeds = []string{
	`{"role":"user","content":"hi"}`,
	`{"role": "user", "content": "spaced out",  "name" : "ann" }`,
	"{\r\n\t\"role\":\"user\",\n\"content\":[{\"type\":\"text\", \"text\":\"a b\"}]\n}",
	`{"content":"order first","role":"assistant","x_custom":{"a":[1,2.50,-0.5e-3,1E+9,true,false,null]}}`,
	`{"role":"user","content":"escapes \u00e9\ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t \u0000 <|endoftext|> <>&"}`,
	`{"role":"user","content":"lone \ud800 surrogate","name":"\udc00x"}`,
	`{"role":"user","role":"assistant","content":"a","content":"b"}`,
	`{"role":"user","content":"x","name":"first","name":null}`,
	`{"role":"user","content":"x","name":null,"name":"last"}`,
	`{"r\u006fle":"user","content":"escaped key","x\u0079":1}`,
	`{"role":"user","content":"x","name":"","tool_call_id":null}`,
	`{"role":null,"content":"x"}`,
	`{"role":"","content":"x"}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"q\": 1}"}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":null,"function":{"name":"f","arguments":null,"strict":true}},{"id":"b","function":{"name":"g"},"index":1}]}`,
	`{"role":"assistant","content":"x","tool_calls":null}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a<b>&c","type":"","function":{"name":"f\u2028","arguments":"{\"html\": \"<p>&amp;</p>\", \"e\": \"\u00e9\"}","z":{"x":"<>&\u2028"},"a":[1]},"index":0,"id":"dup","x\u0079":"k"}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":null,"type":"function","function":{"name":null,"arguments":""}},{"function":{}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f","name":"g","arguments":"1","arguments":null}}]}`,
	"{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"\u2029 para \u2028 line \u2014 dash\"}}]}",
	`{"role":"assistant","content":null,"tool_calls":[null]}`,
	`{"role":"assistant","content":null,"tool_calls":[1,2]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":1,"function":{"name":"f"}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":2,"function":{"name":"f"}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":null}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":"f"}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":["f"]}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"q":1}}}]}`,
	`{"role":"assistant","content":"x","tool_calls":[]}`,
	`{"role":"assistant","content":"x","tool_calls":{}}`,
	`{"role":"assistant","content":"x","tool_calls":[1]}`,
	`{"role":"user","content":42}`,
	`{"role":"user","content":{"a":1}}`,
	`{"role":7,"content":"x"}`,
	`{"role":"user","content":"x","name":["a"]}`,
	`{}`,
	`{"a":{}, "b":[], "c":[[]], "d":{"e":{"f":[{}]}}}`,
	// Not taken by decodeFast: decodeMessage decides (and words the error).
	`[{"role":"user","content":"x"}]`,
	`"a string"`,
	`{"role":"user","content":"x"} trailing`,
	`{"role":"user","content":"x",}`,
	`{"role":"user","content":"x"`,
	`{"role":"user" "content":"x"}`,
	`{"role":"user","content":"bad \x escape"}`,
	"{\"role\":\"user\",\"content\":\"raw\ttab\"}",
	"{\"role\":\"user\",\"content\":\"\xff\xfe\"}",
	`{"role":"user","content":"x","n":01}`,
	`{"role":"user","content":"x","n":1.}`,
	`{"role":"user","content":"x","n":-}`,
	`{"role":"user","content":"x","n":1e}`,
	`{"role":"user","content":"x","n":tru}`,
	`{"role":"user","content":"x","n":nul}`,
	`{"role":"user","content":"\u12"}`,
	`{"role":"user","content":"x",` + strings.Repeat(`"k":`, 3) + `1}`,
	`{"deep":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`,
	`{"deeper":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`,
	` {"role":"user","content":"padded"} ` + "\n",
	`{"role": "user", "content": "spaced, then a syntax error" ,}`,
	`{"role": "user", "content": "spaced, then a key twice", "role": "tool"}`,
	`{"role": "user", "content": 42, "x": [ 1 ]}`,
}

// checkDecode compares decodeFast with decodeMessage on b: when decodeFast takes b, the message
// is decodeMessage's, and the stored JSON is b without its white space, read back as the same
// message; when decodeMessage takes b, so does decodeFast.
func checkDecode(t *testing.T, b []byte) {
	t.Helper()
	want, werr := decodeMessage(bytes.Clone(b))
	// decodeLine, in place, answers as decodeMessage does, error included.
	if _, _, lerr := decodeLine(bytes.Clone(b), true); (lerr == nil) != (werr == nil) || lerr != nil && lerr.Error() != werr.Error() {
		t.Fatalf("decodeLine of %q: %v, decodeMessage: %v", b, lerr, werr)
	}
	for _, inPlace := range []bool{false, true} {
		in := bytes.Clone(b)
		got, raw, ok := decodeFast(in, inPlace)
		if !ok {
			if werr == nil && !repeatsKey(b) {
				t.Fatalf("decodeFast (in place %v) left to decodeMessage a message it takes: %q", inPlace, b)
			}
			continue
		}
		if werr != nil {
			t.Fatalf("decodeFast (in place %v) took what decodeMessage refuses (%v): %q", inPlace, werr, b)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeFast (in place %v) of %q:\n got %#v\nwant %#v", inPlace, b, got, want)
		}
		if g, w := toolCallsColumn(got.ToolCalls), toolCallsJSON(want.ToolCalls); g != w {
			t.Fatalf("tool_calls column of %q:\n got %s\nwant %s", b, g, w)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			t.Fatalf("json.Compact of what decodeFast took: %v", err)
		}
		if !bytes.Equal(raw, compact.Bytes()) {
			t.Fatalf("stored JSON of %q:\n got %s\nwant %s", b, raw, compact.Bytes())
		}
		var back chat.Message
		if err := json.Unmarshal(raw, &back); err != nil || !reflect.DeepEqual(back, want) {
			t.Fatalf("stored JSON %s read back as %#v (%v), want %#v", raw, back, err, want)
		}
	}
}

// repeatsKey reports whether an object of the JSON value b gives a key twice: decodeFast leaves
// such a message to decodeMessage, which stores each key once.
func repeatsKey(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type object struct {
		keys   map[string]bool
		expect bool // the next token is a key
	}
	var stack []*object
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.expect {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return true
				}
				top.keys[k], top.expect = true, false
				continue
			}
		}
		if top != nil {
			top.expect = true // after a value, a key (or the end)
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &object{keys: map[string]bool{}, expect: true})
		case json.Delim('['):
			stack = append(stack, &object{}) // an array: no keys
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				stack[len(stack)-1].expect = stack[len(stack)-1].keys != nil
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].keys == nil {
			stack[len(stack)-1].expect = false
		}
	}
}

func TestDecodeFastAgrees(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		`{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`: false,
		`{"a":"a","b":["a","a"],"c":"a"}`:           false,
		`{"a":1,"b":2,"a":3}`:                       true,
		`{"a":{"x":[1,{}],"y":2,"x":3}}`:            true,
		`[{"k":1},{"k":2,"k":3}]`:                   true,
	} {
		if got := repeatsKey([]byte(in)); got != want {
			t.Fatalf("repeatsKey(%s) = %v", in, got)
		}
	}
	for _, s := range decodeSeeds {
		checkDecode(t, []byte(s))
	}
	files, _ := filepath.Glob("../testdata/conversations/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no recorded conversations")
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			checkDecode(t, line)
			if _, _, ok := decodeFast(bytes.Clone(line), true); !ok {
				t.Fatalf("%s: a recorded message is not decoded in one pass: %.80s", f, line)
			}
			n++
		}
	}
	t.Logf("%d recorded messages decoded alike", n)
}

// The stored JSON shares the memory of an input read in place: nothing is copied.
func TestDecodeFastInPlace(t *testing.T) {
	t.Parallel()
	in := []byte(`{"role": "user",   "content": "a long content"}`)
	m, raw, ok := decodeFast(in, true)
	if !ok || string(raw) != `{"role":"user","content":"a long content"}` {
		t.Fatalf("decodeFast: %s, %v", raw, ok)
	}
	if &raw[0] != &in[0] || &m.Content[0] != &in[len(`{"role":"user","content":`)] {
		t.Fatal("the stored JSON or the content is a copy of the input")
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecode)
}

// An import stores each message's JSON as the input holds it, without the white space between
// its fields: the fields in their order, numbers and escapes as written, <, > and & as they
// are. A message that gives a key twice is stored with each key once (the last value, as it is
// read), and an append of Message values stores their MarshalJSON. The tool_calls column is
// json.Marshal's form either way.
func TestImportStoresTheInputJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, testdb.Name(t, "raw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	jsonl := `{"content": "x <&> \u00e9 \/", "role": "user", "n": 1.50, "e": 1E+2}
{"role":"user","content":"a","x":[ 1, 2 ],"content":"b"}
{"role":"assistant","content":null,"tool_calls":[{"type":"function","id":"c1","function":{"arguments":"{\"q\": \"<b>\"}","name":"f"}}]}
{"tool_call_id": "c1", "role": "tool", "content": "ok"}
`
	if _, err := s.Import(ctx, "t", strings.NewReader(jsonl), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(ctx, "t", strings.NewReader(`[ {"role": "user", "content": "in an array", "z": {"b": 1, "a": 2}} ]`), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "t", []chat.Message{{Role: chat.RoleAssistant, Content: json.RawMessage(`"<done>"`), Extra: map[string]json.RawMessage{"b": json.RawMessage("1"), "a": json.RawMessage("2")}}}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	rows, err := s.h.Q().ListMessages(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"content":"x <&> \u00e9 \/","role":"user","n":1.50,"e":1E+2}`,
		`{"role":"user","content":"b","x":[1,2]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"type":"function","id":"c1","function":{"arguments":"{\"q\": \"<b>\"}","name":"f"}}]}`,
		`{"tool_call_id":"c1","role":"tool","content":"ok"}`,
		`{"role":"user","content":"in an array","z":{"b":1,"a":2}}`,
		`{"role":"assistant","content":"\u003cdone\u003e","a":2,"b":1}`,
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		if r.Raw != want[i] {
			t.Errorf("message %d stored as\n%s\nwant\n%s", i+1, r.Raw, want[i])
		}
	}
	if got, want := rows[2].ToolCalls.String, `[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"q\": \"\u003cb\u003e\"}"}}]`; got != want {
		t.Errorf("tool_calls column %s, want %s", got, want)
	}
	if got := rows[0].Content.String; got != "x <&> \u00e9 /" {
		t.Errorf("content column %q", got)
	}
}

// skipPlain stops where a byte-at-a-time scan stops.
func FuzzSkipPlain(f *testing.F) {
	for _, s := range []string{"", "plain text, longer than eight bytes", `0123456"89`, `abcdefgh\ijk`, "abcdefghijklmn\x1f", "é€😀 high bytes \x7f\x80\xff then\"", "\x00"} {
		f.Add([]byte(s), 0)
	}
	f.Fuzz(func(t *testing.T, b []byte, from int) {
		if from < 0 || from > len(b) {
			return
		}
		want := from
		for want < len(b) && strPlain[b[want]] {
			want++
		}
		if got := skipPlain(b, from); got != want {
			t.Fatalf("skipPlain(%q, %d) = %d, want %d", b, from, got, want)
		}
	})
}

// TestSharedText checks that an imported message's text shares the bytes of its stored JSON
// exactly when the text is those bytes as written, and is otherwise decoded: the stored text
// and the count are the same either way.
func TestSharedText(t *testing.T) {
	for _, tc := range []struct {
		line   string
		shared bool
	}{
		{`{"role":"user","content":"plain ASCII text, base64 +/= and words"}`, true},
		{`{"role":"user","content":"non-ASCII: é 中文 😀"}`, true},
		{`{"role":"user","content":""}`, true},
		{`{"role":"user","content":"an escape: \n and \"quotes\""}`, false},
		{`{"role":"user","content":"\u00e9 written as an escape"}`, false},
		{`{"role":"user","content":"NUL \u0000 as an escape"}`, false},
		{`{"role":"user","content":[{"type":"text","text":"parts"}]}`, false},
		{`{"role":"user","content":null}`, false},
	} {
		m, raw, err := decodeLine([]byte(tc.line), true)
		if err != nil || raw == nil {
			t.Fatalf("%s: %v (raw %q)", tc.line, err, raw)
		}
		text, shared := sharedText(m.Content, raw)
		if shared != tc.shared {
			t.Errorf("%s: shared %v, want %v", tc.line, shared, tc.shared)
		}
		if shared {
			if want, _ := jsontext.StringValue(m.Content); text != want {
				t.Errorf("%s: shared text %q, decoded %q", tc.line, text, want)
			}
			if len(text) > 0 && unsafe.StringData(text) != &raw[bytes.Index(raw, []byte(text))] {
				t.Errorf("%s: the text is a copy", tc.line)
			}
		}
		// Content that is not inside the stored JSON (a message made otherwise) is decoded.
		if _, shared := sharedText(bytes.Clone(m.Content), raw); shared {
			t.Errorf("%s: content outside raw shared", tc.line)
		}
		counter, err := tokencount.NewCounter("o200k_base")
		if err != nil {
			t.Fatal(err)
		}
		got := storedText(m, raw, counter)
		if want := db.MakeStorable(m.Text()); got.text != want {
			t.Errorf("%s: stored text %q, want %q", tc.line, got.text, want)
		}
		if want := counter.CountMessage(m); got.tokens != want {
			t.Errorf("%s: %d tokens, want %d", tc.line, got.tokens, want)
		}
	}
	// Invalid UTF-8 is never shared (decodeLine refuses it; sharedText checks it still).
	raw := []byte("{\"content\":\"\xff\"}")
	if _, shared := sharedText(raw[11:14], raw); shared {
		t.Error("invalid UTF-8 shared")
	}
}
