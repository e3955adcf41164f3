package memory

// SetIndexBatchBytes changes how much text the store's appends write before indexing it, for a
// test.
func (s *Store) SetIndexBatchBytes(n int) { s.indexBatch = n }

// LargeMessage is the stored size from which an append releases memory around a message.
const LargeMessage = largeMessage
