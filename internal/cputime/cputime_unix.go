//go:build unix

// Package cputime reads the CPU time of this process, which the bench and the benchmarks of
// the tests report beside wall times.
package cputime

import (
	"syscall"
	"time"
)

// Self is the CPU time this process has used, user and system, on every thread: a measure
// the load of other processes on the machine changes less than the wall time.
func Self() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
