//go:build !unix

package serve

// openFileLimit is the process's soft limit of open files: unknown here (0).
func openFileLimit() int64 { return 0 }
