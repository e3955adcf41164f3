//go:build !heavy

package storetest

// Heavy is false in the default run (the README's go test command): the property tests run
// their first generated cases only, and the whole set under -tags heavy.
const Heavy = false
