package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	msqlite "modernc.org/sqlite"
)

// LargeMessageInserter is implemented by a Querier that can write a message of many megabytes
// without holding every copy of it at once (the SQLite backend's): see InsertLargeMessage.
// Another Querier writes it with InsertMessage.
type LargeMessageInserter interface {
	// InsertLargeMessage is InsertMessage, but it takes arg's Content and Raw: it clears them
	// in *arg, and the memory of each is handed back to the system once SQLite has its own
	// copy, if the caller holds no other reference to them.
	InsertLargeMessage(ctx context.Context, arg *InsertMessageParams) error
}

// Writing a row, the driver copies each bound value out of Go memory and SQLite builds the
// record from those copies, while the Go strings they came from stay reachable until the call
// returns: for a message of 20 MB, its text and stored JSON in Go, in the driver's copies and
// in the record, six copies at the peak (five when the text shares the stored JSON's bytes).
// InsertLargeMessage binds a key for each of the two instead, and the statement takes the
// value of each key through memcascade_take, which drops it from Go memory once the driver has
// copied it, before the record is built: then the two values in SQLite, the record, and the
// region of the driver's own copy, which its allocator keeps for reuse (five). The measures
// are in docs/benchmarks.md (the message rows).
const insertLargeMessage = `INSERT INTO messages (thread_id, seq, role, content, name, tool_calls, tool_call_id, raw, tokens, created_at)
VALUES (?, ?, ?, memcascade_take(?), ?, ?, ?, memcascade_take(?), ?, memcascade_release(?))`

// handed holds the values handed over to a statement, by key, until memcascade_take takes
// them.
var (
	handed  sync.Map // int64 -> string
	handKey atomic.Int64
)

func init() {
	// SQLite evaluates the values of an INSERT in the order of the table's columns (content,
	// then raw, then created_at), each call of a function that is not deterministic where it
	// stands, after the ones before it and before the record is built.
	msqlite.MustRegisterScalarFunction("memcascade_take", 1, takeHanded)
	msqlite.MustRegisterScalarFunction("memcascade_release", 1, releaseHanded)
}

// handOver keeps s for memcascade_take and returns its key; a NULL is bound as itself.
func handOver(s sql.NullString) any {
	if !s.Valid {
		return nil
	}
	k := handKey.Add(1)
	handed.Store(k, s.String)
	return k
}

// takeHanded is memcascade_take(key): the value handed over with key, dropped from handed. The
// garbage of the values taken before it (the driver copied them) goes back to the system
// first.
func takeHanded(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	if args[0] == nil {
		return nil, nil
	}
	k, ok := args[0].(int64)
	if !ok {
		return nil, fmt.Errorf("memcascade_take: key %v is not an integer", args[0])
	}
	v, ok := handed.LoadAndDelete(k)
	if !ok {
		return nil, fmt.Errorf("memcascade_take: no value for key %d", k)
	}
	debug.FreeOSMemory()
	return v, nil
}

// releaseHanded is memcascade_release(x): x, after the garbage of the values taken (copied by
// the driver) went back to the system.
func releaseHanded(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	debug.FreeOSMemory()
	return args[0], nil
}

// InsertLargeMessage implements LargeMessageInserter.
func (q *Queries) InsertLargeMessage(ctx context.Context, arg *InsertMessageParams) error {
	content := handOver(arg.Content)
	raw := handOver(sql.NullString{String: arg.Raw, Valid: true})
	arg.Content, arg.Raw = sql.NullString{}, ""
	defer func() {
		// Values the statement did not take (it failed first) are dropped here.
		for _, k := range []any{content, raw} {
			if k != nil {
				handed.Delete(k)
			}
		}
	}()
	_, err := q.exec(ctx, nil, insertLargeMessage, arg.ThreadID, arg.Seq, arg.Role, content, arg.Name,
		arg.ToolCalls, arg.ToolCallID, raw, arg.Tokens, arg.CreatedAt)
	return err
}
