package redact

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// Secrets of a known shape hidden in base64 or hex: a run of base64 (standard or URL
// alphabet, padded or not) or of hex digits, at least minEncoded bytes long, that decodes
// to printable text in which the rules find a secret is replaced whole, with the kind of
// the secret inside. Random data, digests, git ids and ordinary text in base64 decode to
// bytes that are not printable, or to text that holds no secret, and are kept.

// minEncoded is the shortest run decoded.
const minEncoded = 16

// maxEncoded bounds the bytes of a run decoded: a longer run is read in its first
// maxEncoded bytes (a secret of a known shape fits in them; a file in base64 is not read
// whole).
const maxEncoded = 4096

var b64Run = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = isWordByte(byte(c)) || c == '+' || c == '/' || c == '-'
	}
	return t
}()

// encoded returns the spans of the runs of text that decode to a secret.
func (r *Redactor) encoded(text string, depth int) []secret {
	var out []secret
	encodedRuns(text, func(s, e, end int) {
		if kind, ok := r.decodesToSecret(text[s:e], depth); ok {
			out = append(out, secret{s, end, kind})
		}
	})
	return out
}

// encodedRuns calls f, in order, with each maximal run of base64 alphabet bytes of text
// that is minEncoded bytes or more long once the slashes, pluses, dashes and underscores
// that start it are left out (a path's or URL's slashes before a run are no part of it:
// https://ZGlz...): [s, e) is the run, [s, end) the run and up to two '=' of padding.
//
// A run of minEncoded bytes or more holds a multiple of minEncoded, so only the bytes at
// multiples of minEncoded are probed, and the run is measured around a probe that hits:
// ordinary words are passed over without looking at most of their bytes.
func encodedRuns(text string, f func(s, e, end int)) {
	n := len(text)
	for p := 0; p < n; p += minEncoded {
		if !b64Run[text[p]] {
			continue
		}
		s, e := p, p+1
		for s > 0 && b64Run[text[s-1]] {
			s--
		}
		for e < n && b64Run[text[e]] {
			e++
		}
		p = e - e%minEncoded // the next probe is the first past this run
		if e-s < minEncoded {
			continue
		}
		for s < e && (text[s] == '/' || text[s] == '+' || text[s] == '-' || text[s] == '_') {
			s++
		}
		if e-s < minEncoded {
			continue
		}
		end := e
		for end < n && text[end] == '=' && end-e < 2 {
			end++
		}
		f(s, e, end)
	}
}

// decodesToSecret decodes run (hex when it is hex digits only, base64 otherwise) and
// reports the kind of the first secret the rules find in it, when it is printable.
func (r *Redactor) decodesToSecret(run string, depth int) (string, bool) {
	run = run[:min(len(run), maxEncoded)]
	var dec []byte
	if isHexRun(run) {
		if len(run)%2 == 1 || !hexLooksPrintable(run) {
			return "", false
		}
		dec, _ = hex.DecodeString(run)
	} else {
		n := len(run) / 4 * 4
		if len(run)%4 >= 2 {
			n = len(run)
		}
		run = run[:n]
		if !b64LooksPrintable(run) {
			return "", false
		}
		enc := base64.RawStdEncoding
		if strings.ContainsAny(run, "-_") {
			if strings.ContainsAny(run, "+/") {
				return "", false
			}
			enc = base64.RawURLEncoding
		}
		var err error
		if dec, err = enc.DecodeString(run); err != nil {
			return "", false
		}
	}
	if len(dec) < 8 || !printable(dec) {
		return "", false
	}
	for _, s := range r.secretsAt(string(dec), depth+1) {
		return s.kind, true
	}
	return "", false
}

func isHexRun(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHexDigit(s[i]) {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// hexLooksPrintable checks the high digit of every byte: printable ASCII is 0x20 to 0x7e,
// tab and line breaks 0x09 to 0x0d.
func hexLooksPrintable(s string) bool {
	for i := 0; i < len(s); i += 2 {
		if c := s[i]; c < '2' || c > '7' {
			if c != '0' {
				return false
			}
		}
	}
	return true
}

// b64LooksPrintable checks the first character of every group of four: it holds the top
// six bits of a byte, which for ASCII text are below 32 (A-Z, a-f).
func b64LooksPrintable(s string) bool {
	for i := 0; i < len(s); i += 4 {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// printable reports ASCII text: printable bytes, tabs and line breaks.
func printable(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 || c > 0x7e) && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}
