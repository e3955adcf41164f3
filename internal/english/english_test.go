package english_test

import (
	"testing"

	"github.com/memcascade/memcascade/internal/english"
)

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 passes"}, {1, "1 pass"}, {2, "2 passes"}, {-1, "-1 pass"}, {11, "11 passes"}} {
		if got := english.Count(c.n, "pass", "passes"); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
