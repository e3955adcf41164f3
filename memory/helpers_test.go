package memory_test

// Helpers shared by the tests of package memory_test. Most are one-line wrappers of
// internal/storetest (stores, the recorded conversations of testdata, and cascades of fakes or
// of the offline summarizer; see each there), so that a test reads the same in any package
// that uses them.

import (
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// heavyRun is true under -tags heavy: the property tests then run every generated case, and
// in the default run their first generated cases only.
const heavyRun = storetest.Heavy

func openStore(t testing.TB) (*memory.Store, string) {
	t.Helper()
	return storetest.Open(t)
}

func importFile(t testing.TB, s *memory.Store, thread, file string) []byte {
	t.Helper()
	return storetest.Import(t, s, thread, file)
}

func extractiveCascade(t testing.TB, s *memory.Store) *cascade.Cascade {
	t.Helper()
	return storetest.ExtractiveCascade(t, s)
}

func failingCascade(s *memory.Store) *cascade.Cascade { return storetest.FailingCascade(s) }

func longThread(t testing.TB, s *memory.Store, thread string, n, size int) {
	t.Helper()
	storetest.LongThread(t, s, thread, n, size)
}

func longThread2(t testing.TB, s *memory.Store, thread string, n, size int) {
	t.Helper()
	storetest.LongThread2(t, s, thread, n, size)
}

// counter is the built-in counter of a built-in encoding.
func counter(t testing.TB, encoding string) *tokencount.BPECounter {
	t.Helper()
	c, err := tokencount.NewCounter(encoding)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func benchMessages(n int) []chat.Message { return storetest.BenchMessages(n) }

// pinnedSeq is a tool result of the airline conversation that the pin tests pin (see
// storetest.PinnedSeq).
const pinnedSeq = storetest.PinnedSeq

func checkPinned(t *testing.T, s *memory.Store, thread string, hist []memory.Entry, when string) memory.Active {
	t.Helper()
	return storetest.CheckPinned(t, s, thread, hist, when)
}

func faultStore(t *testing.T, schema string) (*memory.Store, *testdb.Proxy) {
	t.Helper()
	return storetest.FaultStore(t, schema)
}

func direct(t *testing.T, schema string) *sql.DB {
	t.Helper()
	return storetest.Direct(t, schema)
}

func threadRows(t *testing.T, d *sql.DB, thread string) (n, top, last int64) {
	t.Helper()
	return storetest.ThreadRows(t, d, thread)
}

// mustJSON is s as a JSON string, for a message's content.
func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
