//go:build unix

package serve

import "syscall"

// openFileLimit is the process's soft limit of open files (0: unknown or unlimited).
func openFileLimit() int64 {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil || l.Cur > 1<<40 {
		return 0
	}
	return int64(l.Cur)
}
