//go:build !race

package main

// raceBuild: the test binary is built without -race; goBuild builds memctl so too when asked.
const raceBuild = false
