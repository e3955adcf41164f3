//go:build race

package main

// raceBuild: the test binary is built with -race, and so are the memctl binaries the tests
// build (see goBuild).
const raceBuild = true
