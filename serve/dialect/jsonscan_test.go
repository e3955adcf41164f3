package dialect

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// ScanObject accepts exactly the bodies encoding/json takes for an object, and finds the same
// members and messages.
func FuzzScanRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		` { "model" : "m" , "messages" : [ {"role":"user","content":[{"type":"text","text":"a\"b\\c\u00e9\n"}]} , {} ] , "n": -1.5e+3, "x": [true,false,null,{}], "y": {} } `,
		`{"a":1,"a":2}`, `{"\u006dessages":[1,2]}`, `{}`, `[]`, `{"a":01}`, `{"a":1.}`, `{"a":"\x"}`, `{"a":tru}`,
		`{"a":1}x`, `{"a":[1,]}`, `{"a":{"b":1,}}`, `{"a":"` + "\x01" + `"}`, `{"a":-}`, `{"a":1e}`, `{"a":"\u12g4"}`,
		`{"messages":[{"role":"user"}]`, `{"messages":[1],"messages":"x"}`, `{"a":[[[[[]]]]]}`, `{"a":"\/"}`, `{"messages":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return
		}
		members, msgs, err := ScanObject(b, "messages")
		var obj map[string]json.RawMessage
		want := json.Unmarshal(b, &obj) == nil && obj != nil
		if (err == nil) != want {
			t.Fatalf("%q: ScanObject error %v; encoding/json takes it: %v", b, err, want)
		}
		if err != nil {
			return
		}
		if len(members) != len(obj) {
			t.Fatalf("%q: %d members, encoding/json finds %d", b, len(members), len(obj))
		}
		for _, m := range members {
			var a, c any
			json.Unmarshal(m.Val, &a)
			json.Unmarshal(obj[m.Key], &c)
			ab, _ := json.Marshal(a)
			cb, _ := json.Marshal(c)
			if !bytes.Equal(ab, cb) {
				t.Fatalf("%q: member %q is %s, encoding/json reads %s", b, m.Key, m.Val, obj[m.Key])
			}
		}
		var elems []json.RawMessage
		if json.Unmarshal(obj["messages"], &elems) == nil {
			if len(elems) != len(msgs) {
				t.Fatalf("%q: %d messages, encoding/json finds %d", b, len(msgs), len(elems))
			}
			for i := range elems {
				var e bytes.Buffer
				json.Compact(&e, elems[i])
				var g bytes.Buffer
				json.Compact(&g, msgs[i])
				if !bytes.Equal(e.Bytes(), g.Bytes()) {
					t.Fatalf("%q: message %d is %s, encoding/json reads %s", b, i, msgs[i], elems[i])
				}
			}
		} else if msgs != nil {
			t.Fatalf("%q: messages found in a member that is not an array", b)
		}
	})
}
