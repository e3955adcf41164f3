package compact_test

// Helpers shared by the tests of package compact_test. Most are one-line wrappers of
// internal/storetest (stores, the recorded conversations of testdata, and cascades of fakes or
// of the offline summarizer; see each there), so that a test reads the same in any package
// that uses them.

import (
	"database/sql"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
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

func fakeEntry(name string, p cascade.Provider, window int) cascade.Entry {
	return storetest.FakeEntry(name, p, window)
}

func longThread(t testing.TB, s *memory.Store, thread string, n, size int) {
	t.Helper()
	storetest.LongThread(t, s, thread, n, size)
}

func longThread2(t testing.TB, s *memory.Store, thread string, n, size int) {
	t.Helper()
	storetest.LongThread2(t, s, thread, n, size)
}

func benchMessages(n int) []chat.Message { return storetest.BenchMessages(n) }

// pinnedSeq is a tool result of the airline conversation that the pin tests pin (see
// storetest.PinnedSeq).
const pinnedSeq = storetest.PinnedSeq

func activeHas(a memory.Active, hist []memory.Entry, seq int64) bool {
	return storetest.ActiveHas(a, hist, seq)
}

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
