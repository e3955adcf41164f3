//go:build race

package redact

// raceOn: the race detector is on. Its sync.Pool drops a quarter of what is put back, by
// design, so what a pool saves in allocations is only partly seen.
const raceOn = true
