package transcript

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestAttrPlain: the fast path of attr (a plain word returned as it is) gives what encoding
// each rune gives, over every byte in every position and some runes past ASCII.
func TestAttrPlain(t *testing.T) {
	slow := func(s string) string { // attr's encoding, rune by rune
		if s == "" {
			return "-"
		}
		if s == "-" {
			return "%2D"
		}
		var b strings.Builder
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == '%' || (r == '#' && i == 0) || unicode.IsSpace(r) || unicode.IsControl(r) {
				for _, c := range []byte(s[i : i+n]) {
					fmt.Fprintf(&b, "%%%02X", c)
				}
			} else {
				b.WriteString(s[i : i+n])
			}
			i += n
		}
		return b.String()
	}
	ins := []string{"", "-", "--", "user", "assistant", "tool", "call_1", "#1", "a#1", "é", "a\u00a0b", "a\u2028b", "\x85", "\xff", "a\xc2"}
	for c := 0; c < 256; c++ {
		ins = append(ins, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"z", string([]byte{byte(c)})+"b")
	}
	plain := 0
	for _, s := range ins {
		if got, want := attr(s), slow(s); got != want {
			t.Errorf("attr(%q) = %q, want %q", s, got, want)
		}
		if s != "" && plainAttr(s) {
			plain++
		}
	}
	if plain < 200 {
		t.Errorf("plainAttr held %d of the inputs plain, want the printable ones (at least 200)", plain)
	}
}
