package testdb

import (
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
