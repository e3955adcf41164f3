// Package nodetest gives tests the Node.js packages of a testdata folder, installed from its
// lockfile: the official clients that tests drive the project with.
package nodetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Require returns the node binary and the absolute path of dir once the packages that dir's
// package-lock.json pins are installed in dir/node_modules (want names one of them, checked
// for its package.json). It installs them with npm ci, from npm's cache alone first (npm ci
// --offline) and then from the registry. When node is missing, or neither the cache nor the
// registry has the packages, the test is skipped, saying so; under CI (CI set in the
// environment), where .ci/run installs them, it fails instead: a skip must not look green there.
func Require(t testing.TB, dir, want string) (node, abs string) {
	t.Helper()
	unavailable := t.Skipf
	if os.Getenv("CI") != "" {
		unavailable = t.Fatalf
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node is not installed: this test drives the official Node package %s and cannot run", want)
		return "", ""
	}
	abs, err = filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if installed(abs, want) {
		return node, abs
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable("%s is not installed in %s and npm is not there to install it", want, abs)
		return "", ""
	}
	var outs []byte
	for _, args := range [][]string{
		{"ci", "--offline", "--no-audit", "--no-fund"}, // npm's cache only
		{"ci", "--no-audit", "--no-fund"},              // the registry
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, npm, args...)
		cmd.Dir = abs
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil && installed(abs, want) {
			return node, abs
		}
		outs = append(outs, out...)
	}
	unavailable("%s could not be installed in %s from its lockfile: neither npm's cache nor the registry has it:\n%s", want, abs, outs)
	return "", ""
}

func installed(dir, pkg string) bool {
	_, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json"))
	return err == nil
}
