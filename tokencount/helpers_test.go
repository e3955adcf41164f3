package tokencount_test

// Helpers shared by the tests of package tokencount_test: the recorded conversations of
// testdata, read without a store.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
)

// airline is a recorded conversation of testdata.
const airline = "../testdata/conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl"

// conversations returns the recorded conversations of testdata.
func conversations(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("../testdata/conversations/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata conversations: %v", err)
	}
	return files
}

// recordedMessages returns every message of the recorded conversations of testdata.
func recordedMessages(t testing.TB) [][]chat.Message {
	t.Helper()
	var all [][]chat.Message
	for _, f := range conversations(t) {
		all = append(all, readMessagesFile(t, f))
	}
	return all
}

func readMessagesFile(t testing.TB, path string) []chat.Message {
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
