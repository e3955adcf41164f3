package memory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
)

// arraySeeds are inputs of the two forms streamArray reads, well formed or not at each place.
var arraySeeds = []string{
	`[{"role":"user","content":"a"}]`,
	"[\n  {\"role\": \"user\", \"content\": \"a\"},\n  {\"role\": \"assistant\", \"content\": \"b\"}\n]\n",
	`[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"}]  `,
	`{"messages": [{"role":"user","content":"a"}]}`,
	`{ "messages" : [ {"role":"user","content":"a"} , {"role":"user","content":"b"} ] , "model": "gpt-4o", "n": [1, {"x": "]"}] }`,
	`{"messages":[{"role":"user","content":"a"}],"messages":[]}`,
	`{"messages":[{"role":"user","content":"a"}],"x":}`,
	`{"messages":[{"role":"user","content":"a"}]`,
	`{"messages":[{"role":"user","content":"a"}]} trailing`,
	`{"messages":[{"role":"user","content":"a"}]} {}`,
	`{"messages": null}`,
	`{"messages": {}}`,
	`[]`,
	`[ ]`,
	`[,]`,
	`[{"role":"user","content":"a"},]`,
	`[{"role":"user","content":"a"},,{"role":"user","content":"b"}]`,
	`[{"role":"user","content":"a"} {"role":"user","content":"b"}]`,
	`[{"role":"user","content":"a"}`,
	`[{"role":"user","content":"a"},`,
	`[{"role":"user","content":"a"}]]`,
	`[{"role":"user","content":"a"}] x`,
	`[{"role":"user","content":"a"}] [1]`,
	`[1]`,
	`[{"role":"user","content":"a"},"string",{"role":"user","content":"b"}]`,
	`[{"role":"user","content":"a"},null]`,
	`[{"role":"user","content":"a"},{"role":"robot","content":"b"}]`,
	`[{"role":"user","content":"a"},{"role":"user","content":42}]`,
	`[{"role":"user","content":"a"},{"role":"user","content":"b","content":"c"}]`,
	`[{"role":"user","content":"unclosed}]`,
	`[{"role":"user","content":"a\"}]"},{"role":"user","content":"b\\"}]`,
	`[{"role":"user","content":"a"]`,
	`[{"role":"user","content":{"a":[}]}]`,
	"[{\"role\":\"user\",\"content\":\"\xff\"}]",
	"[{\"role\":\"user\",\"content\":\"\xff\" x}]",
	"[{\"role\":\"user\",\"content\":\"ctl\x01\"}]",
	`[{"role":"tool","tool_call_id":"zz","content":"r"}]`,
	`[ {"": "", "0": ""}.`,
	`[{"role":"user","content":"a"}1]`,
	`[{"role":"user","content":"a"}0.5,{}]`,
}

// readAll collects what readMessages gives add, and its error.
func readAll(read func(add func(chat.Message, []byte, int) error) error) ([]chat.Message, [][]byte, string) {
	var ms []chat.Message
	var raws [][]byte
	err := read(func(m chat.Message, raw []byte, _ int) error {
		if m.Role == "tool" {
			return fmt.Errorf("add refused message %d", len(ms))
		}
		ms, raws = append(ms, m), append(raws, bytes.Clone(raw))
		return nil
	})
	if err != nil {
		return ms, raws, err.Error()
	}
	return ms, raws, ""
}

// checkArray compares readMessages (streamArray) with json.Decoder's reading of in (decodeArray
// from the input's start): the same messages, the same stored JSON or none, the same error.
func checkArray(t *testing.T, in []byte) {
	t.Helper()
	first := bytes.TrimLeft(in, jsonSpace)
	if len(first) == 0 || (first[0] != '[' && messagesHead(first) == 0) {
		return // JSONL or another form: not streamArray's
	}
	got, gotRaw, gotErr := readAll(func(add func(chat.Message, []byte, int) error) error { return readMessages(bytes.NewReader(in), add) })
	want, wantRaw, wantErr := readAll(func(add func(chat.Message, []byte, int) error) error {
		br := bufio.NewReader(bytes.NewReader(in))
		firstByte(br)
		return decodeArray(json.NewDecoder(br), first[0] == '{', 0, false, add)
	})
	if gotErr != wantErr {
		t.Fatalf("%q:\n streamArray: %s\n json.Decoder: %s", in, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: streamArray read\n%#v\njson.Decoder\n%#v", in, got, want)
	}
	for i := range gotRaw {
		if !bytes.Equal(gotRaw[i], wantRaw[i]) {
			t.Fatalf("%q: message %d stored as %s, %s by json.Decoder", in, i, gotRaw[i], wantRaw[i])
		}
	}
}

func TestStreamArrayAgrees(t *testing.T) {
	t.Parallel()
	for _, s := range arraySeeds {
		checkArray(t, []byte(s))
	}
	files, _ := filepath.Glob("../testdata/conversations/*.jsonl")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		checkArray(t, []byte("[\n"+strings.Join(lines, ",\n")+"\n]"))
		checkArray(t, []byte(`{"messages": [`+strings.Join(lines, ", ")+`], "model": "m"}`))
	}
}

// An element longer than the reader's buffer is read whole.
func TestStreamArrayLongElement(t *testing.T) {
	t.Parallel()
	text := strings.Repeat(`long "quoted" {text} [in] brackets \ `, 1<<12)
	m, _ := json.Marshal(chat.TextMessage(chat.RoleUser, text))
	in := []byte("[" + string(m) + ", " + string(m) + "]")
	ms, raws, err := readAll(func(add func(chat.Message, []byte, int) error) error { return readMessages(bytes.NewReader(in), add) })
	if err != "" || len(ms) != 2 || ms[1].Text() != text || !bytes.Equal(raws[0], m) {
		t.Fatalf("read %d messages (%s)", len(ms), err)
	}
	checkArray(t, in)
}

func FuzzStreamArray(f *testing.F) {
	for _, s := range arraySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkArray)
}

// BenchmarkReadMessages reads the recorded conversations, as the files hold them, without
// storing them: JSONL, a JSON array read by streamArray, and the same array read by
// json.Decoder (decodeArray, what the array form took before streamArray).
func BenchmarkReadMessages(b *testing.B) {
	files, _ := filepath.Glob("../testdata/conversations/*.jsonl")
	var lines []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSpace(string(data)), "\n")...)
	}
	jsonl, array := strings.Join(lines, "\n"), "[\n"+strings.Join(lines, ",\n")+"\n]"
	none := func(chat.Message, []byte, int) error { return nil }
	for _, tc := range []struct {
		name, input string
		read        func(string) error
	}{
		{"jsonl", jsonl, func(in string) error { return readMessages(strings.NewReader(in), none) }},
		{"array", array, func(in string) error { return readMessages(strings.NewReader(in), none) }},
		{"array-json.Decoder", array, func(in string) error {
			br := bufio.NewReaderSize(strings.NewReader(in), 64<<10)
			firstByte(br)
			return decodeArray(json.NewDecoder(br), false, 0, false, none)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.input)))
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.read(tc.input); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
