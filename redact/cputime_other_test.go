//go:build !unix

package redact

// cpuNanos is not measured here: the benchmarks report no CPU-time rate.
func cpuNanos() int64 { return 0 }
