package memory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// bigMessageLine is one JSONL line holding a user message of about size bytes of text, with
// escapes (quotes, newlines) as real tool output has.
func bigMessageLine(t testing.TB, size int) []byte {
	t.Helper()
	var sb strings.Builder
	for i := 0; sb.Len() < size; i++ {
		fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog; id=ZQ%05d \"quoted\" path/to/file_%d.go\n", i, i%99999, i)
	}
	line, err := json.Marshal(chat.TextMessage(chat.RoleUser, sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	return append(line, '\n')
}

// TestImportLargeMessageAllocates bounds what the import of one large message allocates on the
// Go heap, in total over the whole import (reading, decoding, the stored JSON, the text, the
// token count, the insert): every copy of the message is counted here, garbage included. The
// bound holds only if no step makes a copy of it beyond the input's own buffering (twice the
// line or array element, read in pieces and joined once) and the decoded text: the stored JSON
// is the line itself. It measures 3 times the message for both forms (a copy more under the
// race detector); the bounds, 5, leave room for that. Before, JSONL allocated 12 times, then
// 5, and an array 6. On PostgreSQL the driver copies both stored columns (the text and the
// JSON, two copies of the message) into its wire buffer, which grows by doubling: about 6
// times more; the bounds there are 6 higher.
//
// The default run imports a message of 9 MB, 1 MB over memory.LargeMessage, so the append
// takes the path of large messages (it measures 3.0 times the message, as at 4 and 20 MB);
// -tags heavy imports 20 MB; -short imports the JSONL form only. It is not parallel:
// TotalAlloc counts every goroutine's allocations, and no other test runs beside a sequential
// one.
func TestImportLargeMessageAllocates(t *testing.T) {
	s, _ := storetest.Open(t)
	ctx := context.Background()
	// Load the encoding and warm the statements outside the measure.
	if _, err := s.Import(ctx, "warm", strings.NewReader(`{"role":"user","content":"hello"}`), memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	size := memory.LargeMessage + 1<<20
	if storetest.Heavy {
		size = 20 << 20
	}
	line := bigMessageLine(t, size)
	array := append(append([]byte("["), bytes.TrimSpace(line)...), ']')
	forms := []struct {
		format string
		input  []byte
		times  int
	}{{"JSONL", line, 5}, {"a JSON array", array, 5}}
	if testing.Short() {
		forms = forms[:1] // the JSONL form alone: each is a long sequential import under the race detector
	}
	for _, tc := range forms {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err := s.Import(ctx, "big "+tc.format, bytes.NewReader(tc.input), memory.AppendOptions{})
		runtime.ReadMemStats(&after)
		if err != nil || res.Appended != 1 {
			t.Fatalf("import: %+v, %v", res, err)
		}
		total := after.TotalAlloc - before.TotalAlloc
		t.Logf("import of a %d MB message as %s allocated %d MB (%.1fx)", len(line)>>20, tc.format, total>>20, float64(total)/float64(len(line)))
		if testdb.Backend() == testdb.Postgres {
			tc.times += 6
		}
		if limit := uint64(tc.times * len(line)); total > limit {
			t.Errorf("import of a %d-byte message as %s allocated %d bytes, over %d (%dx the message)", len(line), tc.format, total, limit, tc.times)
		}
	}
}

// TestImportLargeMessageStored imports messages of memory.LargeMessage bytes and more, which
// the SQLite store writes through db.LargeMessageInserter (the text and the stored JSON handed
// to the statement by key), and checks every stored column against the input: the stored
// JSON is the line, the text its decoded content, the count the counter's. A message with
// escapes (its text a copy) and one without (its text shared with the line), and one of each
// in the same import, with a small one between them.
func TestImportLargeMessageStored(t *testing.T) {
	s, _ := storetest.Open(t)
	ctx := context.Background()
	escaped := bytes.TrimSpace(bigMessageLine(t, memory.LargeMessage))
	var plain strings.Builder
	for i := 0; plain.Len() < memory.LargeMessage; i++ {
		fmt.Fprintf(&plain, "QUJD%08dREVGR0hJSktMTU5PUFFSU1RVVldYWVo+/", i)
	}
	plainLine, err := json.Marshal(chat.Message{Role: chat.RoleAssistant, Content: json.RawMessage(`"` + plain.String() + `"`), Name: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	small := []byte(`{"role":"user","content":"a short one between"}`)
	input := bytes.Join([][]byte{escaped, small, plainLine}, []byte("\n"))
	res, err := s.Import(ctx, "large", bytes.NewReader(input), memory.AppendOptions{})
	if err != nil || res.Appended != 3 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	rows, err := s.DB().Q().ListMessages(ctx, "large")
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	th, err := s.Thread(ctx, "large")
	if err != nil {
		t.Fatal(err)
	}
	counter, err := s.Counter(th.Encoding)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range [][]byte{escaped, small, plainLine} {
		var m chat.Message
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		r := rows[i]
		if r.Raw != string(line) {
			t.Errorf("message %d: the stored JSON (%d bytes) is not the line (%d bytes)", i+1, len(r.Raw), len(line))
		}
		if !r.Content.Valid || r.Content.String != m.Text() {
			t.Errorf("message %d: the stored text (%d bytes) is not the content (%d bytes)", i+1, len(r.Content.String), len(m.Text()))
		}
		if want := counter.CountMessage(m); r.Tokens != int64(want) {
			t.Errorf("message %d: %d tokens stored, want %d", i+1, r.Tokens, want)
		}
		if r.Name.String != m.Name || r.Role != m.Role || r.Seq != int64(i+1) {
			t.Errorf("message %d: stored %q %q seq %d, want %q %q", i+1, r.Role, r.Name.String, r.Seq, m.Role, m.Name)
		}
	}
}
