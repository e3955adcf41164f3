//go:build !heavy

package memory_test

// heavyRun is false in the default run (the README's go test command): the property tests
// run their first generated cases only, and the whole set under -tags heavy.
const heavyRun = false
