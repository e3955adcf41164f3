package memory

// SetIndexBatchBytes changes how much text an append writes before indexing it, for a test;
// the returned function restores it.
func SetIndexBatchBytes(n int) (restore func()) {
	old := indexBatchBytes
	indexBatchBytes = n
	return func() { indexBatchBytes = old }
}
