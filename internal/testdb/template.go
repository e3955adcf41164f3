package testdb

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Template gives tests new SQLite databases as copies of one made once per process: opening a
// new file runs every migration, which under the race detector is most of the time a short
// test takes (SQLite parses each statement of the schema in instrumented code). A copy of the
// closed file is the database the open made, byte for byte. On PostgreSQL Name is the
// package's Name (a schema of its own).
type Template struct {
	create func(path string) error // makes a database at path and closes it

	once sync.Once
	path string // the template, in a directory of its own that Main removes
	err  error
}

// NewTemplate returns a Template whose databases are what create makes at a path of a new
// file (open the store there and close it).
func NewTemplate(create func(path string) error) *Template { return &Template{create: create} }

var (
	templatesMu sync.Mutex
	templateDir []string // the templates' directories, removed when the test binary exits
)

// Name returns the name of a new database for t on the current backend: on SQLite the path of
// file in a temporary directory of t, a copy of the template (made by the first call); on
// PostgreSQL a new schema, as Name.
func (tp *Template) Name(t testing.TB, file string) string {
	t.Helper()
	if backend != SQLite {
		return Name(t, file)
	}
	tp.once.Do(func() {
		dir, err := os.MkdirTemp("", "testdb-template-")
		if err != nil {
			tp.err = err
			return
		}
		templatesMu.Lock()
		templateDir = append(templateDir, dir)
		templatesMu.Unlock()
		tp.path = filepath.Join(dir, "template.db")
		if err := tp.create(tp.path); err != nil {
			tp.err = fmt.Errorf("the template database: %w", err)
		}
	})
	if tp.err != nil {
		t.Fatal(tp.err)
	}
	path := filepath.Join(t.TempDir(), file)
	// A closed database is its file (the last connection moved its log into it) and a log
	// if one was left.
	for _, suffix := range []string{"", "-wal"} {
		if err := copyFile(tp.path+suffix, path+suffix); err != nil && !(suffix != "" && os.IsNotExist(err)) {
			t.Fatal(err)
		}
	}
	return path
}

// copyFile copies the file at from to a new file to, with from's permissions.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// removeTemplates removes the templates' directories.
func removeTemplates() {
	templatesMu.Lock()
	defer templatesMu.Unlock()
	for _, dir := range templateDir {
		os.RemoveAll(dir)
	}
	templateDir = nil
}
