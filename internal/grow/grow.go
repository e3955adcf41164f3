// Package grow appends to slices a host keeps and extends a little at a time.
package grow

// Append appends to s as append does, but grows a full s by an eighth rather than
// doubling it: a slice a host keeps per thread and extends each turn holds little unused room
// (doubled, half of what many threads kept was room), for a copy every few turns.
func Append[T any](s []T, add ...T) []T {
	if cap(s)-len(s) < len(add) {
		grown := make([]T, len(s), len(s)+len(add)+len(s)/8+4)
		copy(grown, s)
		s = grown
	}
	return append(s, add...)
}
