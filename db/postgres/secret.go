package postgres

import (
	"cmp"
	"net/url"
	"slices"
	"strings"
)

// hidePassword returns err with every password rawURL holds replaced by xxxxx in its text: the
// driver's errors may quote the URL whole (one it cannot parse, password parameters included)
// or read part of a password not percent-encoded as the host or database name. errors.Is and
// errors.As still see err.
func hidePassword(err error, rawURL string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	hidden := msg
	for _, s := range passwords(rawURL) {
		hidden = strings.ReplaceAll(hidden, s, "xxxxx")
	}
	if hidden == msg {
		return err
	}
	return &hiddenError{msg: hidden, err: err}
}

type hiddenError struct {
	msg string
	err error
}

func (e *hiddenError) Error() string { return e.msg }
func (e *hiddenError) Unwrap() error { return e.err }

// passwords returns the texts of rawURL that may be a password, longest first: the userinfo's
// password (up to the last '@', as written and decoded, and its pieces between '/', '?' and '#'
// when it holds them unencoded) and the values of the password and sslpassword parameters.
func passwords(rawURL string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= 3 {
			out = append(out, s)
		}
		if d, err := url.PathUnescape(s); err == nil && d != s && len(d) >= 3 {
			out = append(out, d)
		}
	}
	_, rest, _ := strings.Cut(rawURL, "://")
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		if _, pw, ok := strings.Cut(rest[:i], ":"); ok {
			add(pw)
			for _, p := range strings.FieldsFunc(pw, func(r rune) bool { return r == '/' || r == '?' || r == '#' }) {
				add(p)
			}
		}
	}
	if _, query, ok := strings.Cut(rest, "?"); ok {
		for kv := range strings.SplitSeq(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			if k == "password" || k == "sslpassword" {
				v, _, _ = strings.Cut(v, "#")
				add(v)
				if d, err := url.QueryUnescape(v); err == nil {
					add(d)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}
