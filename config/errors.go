package config

import (
	"errors"
	"sort"
	"strconv"
	"strings"
)

// Error is one problem with a configuration. Its text reads
// "file:line: key: msg"; the line is omitted when unknown (0), as it is for
// [Config.Validate], and so are an empty file name and an empty key (a YAML
// syntax error has no key).
type Error struct {
	File string // the file name given to Parse or Load; "" for Validate
	Line int    // 1-based; 0 when unknown
	Key  string // dotted path with list indexes, e.g. "cascade[1].max_attempts"
	Msg  string // what is wrong
	// Err is the underlying error, if any (e.g. the fs error of Load).
	Err error `json:"-"`
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		b.WriteString(e.File + ":" + strconv.Itoa(e.Line) + ": ")
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the underlying error, if any.
func (e *Error) Unwrap() error { return e.Err }

// joinErrors returns nil, the only error, or all of them joined, in line
// order (errors without a line last), keeping the order of discovery
// within a line.
func joinErrors(errs []*Error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	sort.SliceStable(errs, func(i, j int) bool {
		return sortLine(errs[i].Line) < sortLine(errs[j].Line)
	})
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}

func sortLine(l int) int {
	if l <= 0 {
		return int(^uint(0) >> 1)
	}
	return l
}
