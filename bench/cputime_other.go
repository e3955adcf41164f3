//go:build !unix

package main

import "time"

// cpuTime is not measured here: the CPU-time rows show 0.
func cpuTime() time.Duration { return 0 }
