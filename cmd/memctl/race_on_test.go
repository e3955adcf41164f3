//go:build race

package main

// raceBuild: the test binary is built with -race; goBuild builds memctl so too when asked.
const raceBuild = true
