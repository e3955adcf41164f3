package redact

import "sync"

// Withheld replaces the whole of a text that could not be redacted (see Default).
const Withheld = "[REDACTED: redactor unavailable]"

// Default returns the redaction of the built-in patterns, compiled once: the redactor of a
// compactor or a cascade given none. Its failure behaviour is one: should the built-in
// redactor fail to build, every text is replaced whole by Withheld, so that a text that
// cannot be redacted never leaves the machine and is never stored. It is safe for concurrent
// use.
func Default() func(string) string { return builtin() }

var builtin = sync.OnceValue(func() func(string) string { return orWithhold(New(nil)) })

// orWithhold returns r's redaction, or, when err says r could not be built, a redaction that
// withholds every text.
func orWithhold(r *Redactor, err error) func(string) string {
	if err != nil {
		return func(string) string { return Withheld }
	}
	return func(s string) string {
		out, _ := r.Redact(s)
		return out
	}
}
