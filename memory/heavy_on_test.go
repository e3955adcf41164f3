//go:build heavy

package memory_test

// heavyRun is true under -tags heavy: the property tests then run every generated case
// (see heavy_off_test.go for the default run's).
const heavyRun = true
