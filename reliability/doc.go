// Package reliability holds memcascade's heavy reliability suite, kept out of the default
// `go test ./...` run by the build tag heavy:
//
//   - crash_test.go kills `memctl import` and `memctl compact` with SIGKILL at random moments
//     and checks that the database is intact, an import is all or nothing, the active context
//     is the one before or the one after the compaction, and no report stays running.
//   - soak_test.go runs two writer processes and one compacting process on one database file
//     and checks that every message arrived once, in order, with no busy error reaching a
//     caller.
//
// open_test.go has no tag: its quick check that opening a database never waits for another
// process's write runs with every `go test ./...`.
//
// Run the heavy suite with scripts/reliability, or:
//
//	go test -tags heavy -count=1 -v -timeout 30m ./reliability/
//
// MEMCASCADE_CRASH_RUNS (default 100) sets the number of kills, MEMCASCADE_SOAK (default 30s)
// the soak's duration, MEMCASCADE_CRASH_SEED the random seed of the kill delays.
package reliability
