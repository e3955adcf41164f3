package serve_test

import (
	"strings"
	"testing"

	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
)

// TestThreadIDRule: the one table of thread ids, for the rule every entry point applies
// (ValidThreadID) and the proxy's narrower one for ids taken from URLs (ValidURLThreadID), which
// never accepts what the first refuses.
func TestThreadIDRule(t *testing.T) {
	for _, tc := range []struct {
		id       string
		any, url bool // ValidThreadID, ValidURLThreadID accept it
	}{
		{"t", true, true},
		{"support-42", true, true},
		{"a.b_c:d-e", true, true},
		{strings.Repeat("x", 128), true, true},
		{strings.Repeat("x", 129), true, false},
		{strings.Repeat("x", 1024), true, false},
		{strings.Repeat("x", 1025), false, false},
		{"", false, false},
		{"-leading", true, false},
		{"with space", true, false},
		{"a/b", true, false},
		{"été", true, false},
		{"nul\x00inside", false, false},
		{"bad\xffutf8", false, false},
	} {
		name := tc.id
		if len(name) > 20 {
			name = name[:20] + "..."
		}
		if err := memory.ValidThreadID(tc.id); (err == nil) != tc.any {
			t.Errorf("ValidThreadID(%q) = %v, want accepted %v", name, err, tc.any)
		}
		if err := serve.ValidURLThreadID(tc.id); (err == nil) != tc.url {
			t.Errorf("ValidURLThreadID(%q) = %v, want accepted %v", name, err, tc.url)
		}
	}
	if err := memory.ValidThreadID(""); err == nil || err.Error() != "empty thread id" {
		t.Errorf("empty id: %v, want \"empty thread id\"", err)
	}
}
