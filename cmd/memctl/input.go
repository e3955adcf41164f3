package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/memcascade/memcascade/memory"
)

// threadArg refuses a thread id no thread can have (memory.ValidThreadID: empty, too long, not
// UTF-8 or holding a NUL): exit 2.
func threadArg(id string) error {
	if err := memory.ValidThreadID(id); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// positiveFlag refuses a count flag below 1 (exit 2, naming the flag).
func positiveFlag(name string, v int) error {
	if v < 1 {
		return usagef("--%s %d: must be a positive whole number", name, v)
	}
	return nil
}

// ratioFlag refuses a ratio flag outside (0, 1], NaN and the infinities included (exit 2, naming
// the flag).
func ratioFlag(name string, v float64) error {
	if math.IsNaN(v) || !(v > 0 && v <= 1) {
		return usagef("--%s %s: must be a number in (0, 1]", name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return nil
}

// openInput opens FILE for reading, "-" being stdin. A file that cannot be opened, or a
// directory, is a usage error (exit 2).
func openInput(stdin io.Reader, name string) (io.Reader, func(), error) {
	if name == "-" {
		return stdin, func() {}, nil
	}
	if name == "" {
		return nil, nil, usagef("empty file name (use - for standard input)")
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, usageError{err}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, usageError{err}
	}
	if st.IsDir() {
		f.Close()
		return nil, nil, usageError{fmt.Errorf("%s is a directory, not a file of messages", name)}
	}
	return f, func() { f.Close() }, nil
}

// readInput reads FILE whole (see openInput).
func readInput(stdin io.Reader, name string) ([]byte, error) {
	r, closeInput, err := openInput(stdin, name)
	if err != nil {
		return nil, err
	}
	defer closeInput()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, usageError{fmt.Errorf("read %s: %w", name, err)}
	}
	return data, nil
}

func compactionID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, usagef("%q is not a compaction id (a positive integer)", s)
	}
	return id, nil
}

// seqArg parses a message's seq: a whole number from 1.
func seqArg(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, usagef("SEQ %q: must be a message's seq, a whole number from 1", s)
	}
	return n, nil
}
