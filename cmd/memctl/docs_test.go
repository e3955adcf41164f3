package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra/doc"
)

// cliDocs is the CLI reference, generated from the commands' own help by cobra/doc.
var cliDocs = filepath.Join("..", "..", "docs", "cli")

// TestCLIReferenceCurrent fails when docs/cli differs from what the commands say of
// themselves. go test ./cmd/memctl -run TestCLIReferenceCurrent -update rewrites it.
func TestCLIReferenceCurrent(t *testing.T) {
	t.Parallel()
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" },
		out: &termWriter{w: io.Discard}, errOut: &termWriter{w: io.Discard}}
	root := a.rootCommand()
	root.DisableAutoGenTag = true // no generation date: the file must not change by itself
	dir := t.TempDir()
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dir)
	if *update {
		if err := os.RemoveAll(cliDocs); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(cliDocs, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range got {
			if err := os.WriteFile(filepath.Join(cliDocs, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want := readTree(t, cliDocs)
	for name, b := range got {
		if w, ok := want[name]; !ok {
			t.Errorf("docs/cli/%s is missing", name)
		} else if !bytes.Equal(w, b) {
			t.Errorf("docs/cli/%s is stale", name)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("docs/cli/%s documents no command", name)
		}
	}
	if t.Failed() {
		t.Log("regenerate with: go test ./cmd/memctl -run TestCLIReferenceCurrent -update")
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}
