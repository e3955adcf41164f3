package testdb

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestChildArgs: the PostgreSQL run's child gets the test binary's arguments but the log file
// go test caches the result by, in either spelling.
func TestChildArgs(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"-test.run=^TestX$", "-test.testlogfile=/tmp/b001/testlog.txt", "-test.v=test2json"},
			[]string{"-test.run=^TestX$", "-test.v=test2json"}},
		{[]string{"-test.testlogfile", "/tmp/b001/testlog.txt", "-test.count=1"}, []string{"-test.count=1"}},
		{[]string{"--test.testlogfile=x", "-test.timeout=10m0s"}, []string{"-test.timeout=10m0s"}},
		{nil, nil},
	} {
		if got := childArgs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("childArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestTemplate: the template is made once; each Name is a new file of its own, a copy of it
// with its permissions; removeTemplates removes the template's directory.
func TestTemplate(t *testing.T) {
	if backend != SQLite {
		t.Skip("the SQLite run's copies")
	}
	t.Cleanup(removeTemplates) // this package's tests have no TestMain to remove it
	made := 0
	tp := NewTemplate(func(path string) error {
		made++
		return os.WriteFile(path, []byte("a database"), 0o600)
	})
	a, b := tp.Name(t, "a.db"), tp.Name(t, "b.db")
	if made != 1 || a == b {
		t.Fatalf("template made %d times, names %q and %q", made, a, b)
	}
	if err := os.WriteFile(a, []byte("written"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(b)
	if err != nil || string(got) != "a database" {
		t.Fatalf("the second copy holds %q (%v), want the template's bytes", got, err)
	}
	st, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("the copy's mode is %v, want 0600", st.Mode().Perm())
	}
	dir := filepath.Dir(tp.path)
	removeTemplates()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the template's directory is still there: %v", err)
	}
}
