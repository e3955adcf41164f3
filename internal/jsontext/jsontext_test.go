package jsontext_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/internal/jsontext"
)

// jsonStringCases are JSON strings with every escape, invalid UTF-8 and lone surrogates, and
// strings that are not valid JSON.
var jsonStringCases = []string{
	`""`, `"plain ascii"`, `"caf\u00e9 \"q\" \\ \/ \b\f\n\r\t"`, `"日本語 and emoji 😀"`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, `"\uD83D\uDE00"`,
	"\"bad \xff byte\"", "\"cut \xe6\x97\"", `"\u00"`, `"\x"`, `"a"b"`, "\"ctl \x01\"", `"ends \"`,
	`"unterminated`, `x`, ` "spaced" `, `"\u0000"`, `"<>&\u2028"`,
}

// TestStringValue checks the one-copy string decoder of content against encoding/json.
func TestStringValue(t *testing.T) {
	t.Parallel()
	for _, s := range jsonStringCases {
		checkJSONString(t, s)
	}
}

func FuzzStringValue(f *testing.F) {
	for _, s := range jsonStringCases {
		f.Add(s)
	}
	f.Fuzz(checkJSONString)
}

func checkJSONString(t *testing.T, raw string) {
	var want string
	wantErr := json.Unmarshal([]byte(raw), &want)
	isString := strings.HasPrefix(strings.TrimSpace(raw), `"`)
	got, ok := jsontext.StringValue([]byte(raw))
	switch {
	case wantErr == nil && isString && (!ok || got != want):
		t.Errorf("StringValue(%q) = %q, %v; encoding/json gives %q", raw, got, ok, want)
	case (wantErr != nil || !isString) && ok:
		t.Errorf("StringValue(%q) = %q, true; encoding/json: %v", raw, got, wantErr)
	}
}

// AppendString writes a string as json.Marshal does.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\\`, "<a href='x'>&amp;</a>", "line\nsep\u2028para\u2029", "\u2027\u202a \u2014 \u00e9\U0001F600", "ctl \x00\x01\x1f\x7f", "bad \xff\xfe utf-8", "\xe2\x80", "\xe2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := jsontext.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}
