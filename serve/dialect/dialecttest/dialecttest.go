// Package dialecttest holds the checks the tests of every dialect make alike.
package dialecttest

import (
	"reflect"
	"testing"

	"github.com/memcascade/memcascade/serve/dialect"
)

// ParseAgainst parses next against prev, the previous request of its thread, and checks that it
// reads the turn a parse of next on its own reads (the same messages, parameters, hashes and
// elements) and that same of its messages are prev's. It returns the turns of prev and of next.
func ParseAgainst(t *testing.T, d dialect.Dialect, prev, next []byte, same int) (p, got dialect.Turn) {
	t.Helper()
	p, err := d.Parse(prev, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := d.Parse(next, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = d.Parse(next, p.Sent); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Messages, want.Messages) {
		t.Errorf("messages differ from a parse on its own:\n got %v\nwant %v", got.Messages, want.Messages)
	}
	if !reflect.DeepEqual(got.Params, want.Params) {
		t.Errorf("params %v, want %v", got.Params, want.Params)
	}
	if !reflect.DeepEqual(got.Sent.Hashes, want.Sent.Hashes) || !reflect.DeepEqual(got.Sent.Elem, want.Sent.Elem) {
		t.Errorf("hashes or elements differ from a parse on its own: %v, want %v", got.Sent.Elem, want.Sent.Elem)
	}
	if got.Same != same {
		t.Errorf("%d messages the previous request's, want %d", got.Same, same)
	}
	return p, got
}
