// Package nodetest gives tests the Node.js packages of a testdata folder, installed from its
// lockfile: the official clients that tests drive the project with.
package nodetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// installing holds a lock for each folder: two tests of one package that require the same
// folder at once (parallel tests) would otherwise run npm ci into it together, or one would
// see a package.json the other's install has written and run node over a half-installed
// folder.
var installing sync.Map // absolute folder -> *sync.Mutex

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
	mu, _ := installing.LoadOrStore(abs, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
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
		out, err := install(abs, npm, args)
		if err == nil && installed(abs, want) {
			return node, abs
		}
		outs = append(outs, out...)
	}
	unavailable("%s could not be installed in %s from its lockfile: neither npm's cache nor the registry has it:\n%s", want, abs, outs)
	return "", ""
}

// install runs npm with args in a scratch folder beside dir's lockfile and moves the
// node_modules it makes into dir whole: a test process of its own (a package's tests run again
// on PostgreSQL beside the first) that requires dir at the same time sees no node_modules, or
// a complete one, never one being written. When another process moved its own first, that
// one is kept.
func install(dir, npm string, args []string) ([]byte, error) {
	tmp, err := os.MkdirTemp(dir, ".nodetest-install-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o600); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, err
	}
	if err := os.Rename(filepath.Join(tmp, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "node_modules")); serr != nil {
			return out, err
		}
	}
	return out, nil
}

func installed(dir, pkg string) bool {
	_, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json"))
	return err == nil
}
