package main

import (
	"strings"
	"testing"

	"github.com/memcascade/memcascade/db"
)

// TestPasswordInOddURLsNeverShown: a password the URL does not percent-encode (a '/' of a
// base64 password), or one given as a parameter (password=, sslpassword=) of a URL that fails
// to parse, is never printed: not by the error, a debug log, --json or config.
func TestPasswordInOddURLsNeverShown(t *testing.T) {
	const secret = "SECRETPW"
	urls := []string{
		"postgres://u:12/34" + secret + "@127.0.0.1:1/x",
		"postgres://u:ab/cd" + secret + "+ef==@127.0.0.1:1/x",
		"postgres://u:" + secret + "#x@127.0.0.1:1/x",
		"postgres://127.0.0.1:1/x?password=" + secret + "&sslmode=bogus",
		"postgres://u@127.0.0.1:1/x?sslpassword=" + secret + "&sslmode=require&sslkey=/nonexistent",
		"postgres://127.0.0.1:1/x?password=" + secret + "&connect_timeout=abc",
	}
	for _, u := range urls {
		if d := db.Display(u); strings.Contains(d, secret) || strings.Contains(d, "34") {
			t.Errorf("db.Display(%q) = %q shows the password", u, d)
		}
		for _, args := range [][]string{{"threads"}, {"--json", "threads"}, {"--log-level", "debug", "import", "t", "-"}, {"config"}, {"--json", "config"}} {
			m := newMemctl(t)
			m.db = u
			_, out, errs := m.runIn(`{"role":"user","content":"hi"}`, args...)
			if strings.Contains(out+errs, secret) {
				t.Errorf("--db %s %s: the password is printed:\nstdout %q\nstderr %q", db.Display(u), strings.Join(args, " "), out, errs)
			}
		}
	}
}
