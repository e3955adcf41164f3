//go:build !unix

package memory

import "os"

// processAlive reports whether a process with this id runs on this host.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid) // fails on Windows when no such process exists
	if err != nil {
		return false
	}
	p.Release()
	return true
}
