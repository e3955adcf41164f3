package tokenizer

import (
	"syscall"
	"time"
)

// threadCPUTime returns the CPU time the calling thread has used, or 0 if it is unknown. The
// caller must have locked its goroutine to the thread.
func threadCPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
