//go:build !heavy

package tokenizer

// heavyRun is false in the default run (the README's go test command): the random
// comparisons draw the first quarter of their cases, the whole set under -tags heavy.
const heavyRun = false
