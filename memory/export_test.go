package memory

// HoldBatches makes the appends that come queue (as behind a batch running) until release,
// which runs them as batches, for a test. queued reports how many are waiting.
func (s *Store) HoldBatches() (queued func() int, release func()) {
	b := &s.batch
	b.mu.Lock()
	b.running = true
	b.mu.Unlock()
	queued = func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue)
	}
	release = func() {
		for s.runBatch() {
		}
	}
	return queued, release
}

// LargeMessage is the stored size from which an append releases memory around a message.
const LargeMessage = largeMessage

// Unexported names the external tests use.
var (
	AnthropicKey     = anthropicKey
	ErrCopyConflict  = errCopyConflict
	ErrCopySame      = errCopySame
	IDsRenumbered    = idsRenumbered
	ErrNoMessages    = errNoMessages
	ErrNotLatest     = errNotLatest
	ErrConflict      = errConflict
	ErrQueryTooLong  = errQueryTooLong
	MaxQueryWords    = maxQueryWords
	MaxThreadIDBytes = maxThreadIDBytes
	Statuses         = allStatuses
	ClearedArgs      = clearedArgs
)
