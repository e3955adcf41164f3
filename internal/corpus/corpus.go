// Package corpus gives tests the recorded conversations of the repository's testdata: their
// paths, their messages, and a comparison of JSON values that ignores how they were encoded. It
// imports no store, so that the tests of the packages below the store (chat, tokencount) use it
// as the store's tests do (through internal/storetest).
package corpus

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
)

// Airline is the path of the recorded conversation most tests compact: tau-bench's airline
// task 2, trial 1.
var Airline = Testdata("conversations", "tau_bench_airline_gpt4o_task2_trial1.jsonl")

// Testdata returns the absolute path of elem under the repository's testdata directory,
// whatever the directory the test runs in.
func Testdata(elem ...string) string {
	return filepath.Join(append([]string{root()}, append([]string{"testdata"}, elem...)...)...)
}

// root is the repository's directory: two levels above this file, or, when the file's path
// is not a path of this machine (a build with -trimpath), the nearest directory above the
// working directory that holds go.mod.
func root() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Join(filepath.Dir(file), "..", "..")
	}
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			panic("corpus: no go.mod above " + dir)
		}
	}
}

// Conversations returns the recorded conversations of testdata (its conversations/*.jsonl, in
// the order of their names).
func Conversations(t testing.TB) []string {
	t.Helper()
	dir := Testdata("conversations")
	entries, err := os.ReadDir(dir) // not a glob: the checkout's path may hold [ or *
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".jsonl") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata conversations: %v", err)
	}
	return files
}

// RecordedMessages returns every message of the recorded conversations of testdata.
func RecordedMessages(t testing.TB) [][]chat.Message {
	t.Helper()
	var all [][]chat.Message
	for _, f := range Conversations(t) {
		all = append(all, ReadMessagesFile(t, f))
	}
	return all
}

// ReadMessagesFile reads the messages of a JSONL file.
func ReadMessagesFile(t testing.TB, path string) []chat.Message {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ms []chat.Message
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m chat.Message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

// Normalized parses JSON values (one per line, or an array) into generic values, so two
// encodings of the same data compare equal.
func Normalized(t testing.TB, data []byte) []any {
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
