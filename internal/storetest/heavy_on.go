//go:build heavy

package storetest

// Heavy is true under -tags heavy: the property tests then run every generated case (see
// heavy_off.go for the default run's).
const Heavy = true
