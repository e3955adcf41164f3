package chat_test

import (
	"bytes"
	"encoding/json"
	"testing"
)

// normalized parses JSON values (one per line, or an array) into generic values, so two
// encodings of the same data compare equal.
func normalized(t testing.TB, data []byte) []any {
	t.Helper()
	var out []any
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}
