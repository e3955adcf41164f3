//go:build heavy

package tokenizer

// heavyRun is true under -tags heavy: the random comparisons then draw every case (see
// heavy_off_test.go for the default run's).
const heavyRun = true
