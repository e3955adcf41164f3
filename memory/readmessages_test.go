package memory_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/memory"
)

// ReadMessages reads every form to the same messages, returns the tools of the request form
// whatever the order of its keys, and words a bad message as the importer does.
func TestReadMessagesEveryForm(t *testing.T) {
	t.Parallel()
	lines := []string{`{"role":"system","content":"s"}`, `{"role":"user","content":"hi"}`}
	array := "[" + strings.Join(lines, ",") + "]"
	tool := `{"type":"function","function":{"name":"f","parameters":{}}}`
	forms := map[string]string{
		"jsonl":             strings.Join(lines, "\n") + "\n",
		"array":             array,
		"messages":          `{"messages": ` + array + `}`,
		"request":           `{"model": "gpt-4o", "messages": ` + array + `, "tools": [` + tool + `]}`,
		"tools first":       "\xef\xbb\xbf" + `{"tools": [` + tool + `], "messages": ` + array + `}`,
		"request, no tools": `{"model": "m", "messages": ` + array + `}`,
	}
	want, _, err := memory.ReadMessages(strings.NewReader(forms["jsonl"]))
	if err != nil || len(want) != 2 || want[1].Text() != "hi" {
		t.Fatalf("jsonl: %v %v", want, err)
	}
	for form, in := range forms {
		got, tools, err := memory.ReadMessages(strings.NewReader(in))
		if err != nil {
			t.Errorf("%s: %v", form, err)
			continue
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d messages, want %d", form, len(got), len(want))
		}
		for i := range got {
			if got[i].Role != want[i].Role || got[i].Text() != want[i].Text() {
				t.Errorf("%s: message %d is %s %q, want %s %q", form, i, got[i].Role, got[i].Text(), want[i].Role, want[i].Text())
			}
		}
		wantTools := strings.Contains(in, `"tools"`)
		if (len(tools) == 1) != wantTools || wantTools && tools[0].Function.Name != "f" {
			t.Errorf("%s: tools %+v", form, tools)
		}
	}
	for in, msg := range map[string]string{
		lines[0] + "\n" + `{"role": "user", "content": 5`:      "line 2: ",
		`{"model": "m", "messages": [{"content": "no role"}]}`: "message 0: role: missing",
		"[" + tool + "]":                 "message 0: role: missing",
		`[{"content": "no role"}]`:       "message 0: role: missing",
		`{"model": "m", "messages": []}`: "no message (an empty array)",
		`{"model": "m", "messages": [` + lines[0] + `], "tools": 5}`: "tools: want an array of tool definitions",
	} {
		_, _, err := memory.ReadMessages(strings.NewReader(in))
		var ie *memory.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want an *InputError saying %q", in, err, msg)
		}
	}
}
