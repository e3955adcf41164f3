//go:build !linux

package tokenizer

import "time"

// threadCPUTime returns 0: the thread's CPU time is only read on Linux.
func threadCPUTime() time.Duration { return 0 }
