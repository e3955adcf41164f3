package redact

import (
	"encoding/base64"
	"strings"
)

// Secrets that are encoded or cut apart: a PEM key in base64 (kubeconfig client-key-data),
// the body of a PEM key whose BEGIN line is in an earlier message, a JWT broken over two
// lines, user:password in base64, and URL userinfo that is percent-encoded.

// b64PEMPrefix is the base64 of "-----BEGIN": every base64-encoded PEM block starts so.
const b64PEMPrefix = "LS0tLS1CRUdJT"

// matchB64PEM reads a base64 blob at st that decodes to a PEM private key armor
// ("-----BEGIN ... PRIVATE KEY-----"); certificates and public keys are left.
func matchB64PEM(text string, st int) []int {
	e := st
	for e < len(text) && (isB64(text[e]) || text[e] == '=') {
		e++
	}
	if e-st < 40 {
		return nil
	}
	// The BEGIN line fits in its first 80 base64 bytes.
	head := text[st:min(e, st+80)]
	head = head[:len(head)/4*4]
	dec, err := base64.StdEncoding.DecodeString(head)
	if err != nil {
		return nil
	}
	line, _, _ := strings.Cut(string(dec), "\n")
	if !strings.HasPrefix(line, "-----BEGIN") || !strings.Contains(line, "PRIVATE KEY") {
		return nil
	}
	return []int{st, e}
}

// pemTail finds PEM bodies without their BEGIN line (it went in an earlier message, or
// the text was cut). A block of base64 lines (16 to 80 bytes each) is replaced
//   - with the END line that follows it when that ends a private key armor;
//   - when it is two or more lines of exactly 64 bytes (the PEM line width) ending in a
//     shorter line, or in the end of the text.
//
// A block right after a BEGIN line of another armor (a certificate) or before an END line
// of one is left. The block must hold digits and both letter cases, so lists of hex
// digests are left; a 64-wide base64 dump of any file is replaced too.
func pemTail(text string) [][]int {
	var out [][]int
	start, end, full := -1, 0, 0 // the current block: its span, its 64-byte lines
	width, prevWidth := 0, 0     // the width of its first and last line
	last, before := "", ""       // the line before this one, before the block
	var c classes
	closeBlock := func(atEOF bool) {
		if start >= 0 && width == 64 && full >= 2 && (prevWidth < 64 || atEOF) &&
			c.digit > 0 && c.upper > 0 && c.lower > 0 && !strings.HasPrefix(before, "-----BEGIN") {
			out = append(out, []int{start, end})
		}
		start, full, c = -1, 0, classes{}
	}
	for ls := 0; ls < len(text); {
		le := strings.IndexByte(text[ls:], '\n')
		if le < 0 {
			le = len(text)
		} else {
			le += ls
		}
		line := strings.TrimRight(text[ls:le], "\r")
		body := strings.TrimLeft(line, " \t")
		n := len(body)
		b64Line := n >= 16 && n <= 80 && allB64(strings.TrimRight(body, "="))
		if start >= 0 && b64Line && !(prevWidth == width && n <= width) && !strings.HasPrefix(body, "-----END") {
			// A base64 line that does not continue the block ends it and starts the next: the
			// block before an END line is the same whatever an earlier pass replaced above it.
			closeBlock(false)
		}
		switch {
		case b64Line && (start < 0 || prevWidth == width && n <= width):
			if start < 0 {
				start, before, width = ls+len(line)-n, last, n
			}
			if n == 64 {
				full++
			}
			prevWidth, end = n, ls+len(line)
			lc := classify(body)
			c.digit += lc.digit
			c.upper += lc.upper
			c.lower += lc.lower
		case start >= 0 && strings.HasPrefix(body, "-----END"):
			if strings.Contains(body, "PRIVATE KEY") && strings.HasSuffix(body, "-----") &&
				c.digit > 0 && c.upper > 0 && c.lower > 0 && !strings.HasPrefix(before, "-----BEGIN") {
				out = append(out, []int{start, ls + len(line)})
			}
			start, full, c = -1, 0, classes{} // else a certificate or a public key
		case start >= 0:
			closeBlock(false)
		}
		last = body
		ls = le + 1
	}
	closeBlock(true)
	return out
}

func allB64(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isB64(s[i]) {
			return false
		}
	}
	return s != ""
}

// matchSplitJWT reads a JWT at st whose header or payload is broken over lines (a
// terminal or a message wrapped it): segments of base64url bytes, each may continue on
// the next line, separated by dots. The signature may continue on the next line only when
// that line holds nothing else. A JWT on one line is matched by the plain JWT pattern.
func matchSplitJWT(text string, st int) []int {
	i, broke := st, false
	for seg := 0; seg < 2; seg++ {
		if !strings.HasPrefix(text[i:], "eyJ") {
			return nil
		}
		s := i
		for {
			for i < len(text) && isURLB64(text[i]) {
				i++
			}
			if nl := lineBreak(text, i); nl > 0 && i+nl < len(text) && isURLB64(text[i+nl]) {
				i += nl
				broke = true
				continue
			}
			break
		}
		if i-s < 11 || i >= len(text) || text[i] != '.' {
			return nil
		}
		i++
		if nl := lineBreak(text, i); nl > 0 {
			i += nl
			broke = true
		}
	}
	for i < len(text) && isURLB64(text[i]) {
		i++
	}
	if nl := lineBreak(text, i); nl > 0 {
		j := i + nl
		for j < len(text) && isURLB64(text[j]) {
			j++
		}
		// Not a next token of its own: a short word or another JWT.
		if j-i-nl >= 8 && !strings.HasPrefix(text[i+nl:], "eyJ") && (j == len(text) || text[j] == '\n' || text[j] == '\r') {
			i, broke = j, true
		}
	}
	if !broke {
		return nil
	}
	return []int{st, i}
}

// lineBreak returns the length of the line break at i (\n or \r\n), or 0.
func lineBreak(text string, i int) int {
	switch {
	case strings.HasPrefix(text[i:], "\n"):
		return 1
	case strings.HasPrefix(text[i:], "\r\n"):
		return 2
	}
	return 0
}

func isURLB64(b byte) bool { return isWordByte(b) || b == '-' }

// bareBasicCreds finds base64 strings with no label, ending in '=' padding, that decode to
// user:password (a user name of letters, digits and ._@+-, a colon, then at least three
// printable bytes), as the credentials of a Basic Authorization header are encoded.
// Random data, images and base64 text without such a pair decode to something else; a
// URL (https://...) is not taken for one.
//
// Only padded strings are looked at: the scan visits the '=' bytes of the text alone,
// where looking at every base64 run would cost as much again as all the other patterns.
// Unpadded credentials (a third of them) are found after "Basic" and in Authorization
// values only.
func bareBasicCreds(text string) [][]int {
	var out [][]int
	n := len(text)
	for off := 0; off < n; {
		k := strings.IndexByte(text[off:], '=')
		if k < 0 {
			break
		}
		k += off
		e := k + 1
		if e < n && text[e] == '=' {
			e++
		}
		off = e
		if k == 0 || !isB64(text[k-1]) || e < n && (isB64(text[e]) || isB64Edge(text[e])) {
			continue
		}
		i := k
		for i > 0 && k-i < 512 && isB64(text[i-1]) {
			i--
		}
		if i > 0 && text[i-1] == '\\' && (text[i] == 'n' || text[i] == 'r' || text[i] == 't') {
			i++ // after an escaped line break in JSON text
		}
		if e-i >= 8 && (e-i)%4 == 0 && (i == 0 || !isB64Edge(text[i-1]) && text[i-1] != '=') && basicCreds(text[i:e]) {
			out = append(out, []int{i, e})
		}
	}
	return out
}

// basicCreds reports base64 text that decodes to user:password.
func basicCreds(v string) bool {
	if len(v) > 512 {
		return false
	}
	// Decode the first quantum alone: nearly every non-match fails there.
	var q [3]byte
	if _, err := base64.StdEncoding.Decode(q[:], []byte(v[:4])); err != nil || !userByte(q[0]) {
		return false
	}
	dec, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return false
	}
	s := string(dec)
	c := strings.IndexByte(s, ':')
	if c < 1 || len(s)-c-1 < 3 || c > 64 {
		return false
	}
	for i := 0; i < c; i++ {
		if !userByte(s[i]) {
			return false
		}
	}
	pw := s[c+1:]
	if strings.HasPrefix(pw, "//") {
		return false // scheme://...
	}
	for i := 0; i < len(pw); i++ {
		if pw[i] < 0x20 || pw[i] > 0x7e {
			return false
		}
	}
	return true
}

func userByte(b byte) bool {
	return isWordByte(b) || b == '.' || b == '@' || b == '+' || b == '-'
}

// matchPctUserinfo reads percent-encoded URL userinfo after an encoded "://" (a URL inside
// a query parameter): scheme%3A%2F%2Fuser%3Apassword%40host. The user%3Apassword part is
// the secret.
func matchPctUserinfo(text string, st int) []int {
	s := st + len("%3a%2f%2f")
	colon := -1
	for j := s; j < min(len(text), s+400); j++ {
		c := text[j]
		if c <= ' ' || strings.IndexByte("/?#&\"'<>\\", c) >= 0 {
			return nil
		}
		if c != '%' || j+2 >= len(text) {
			continue
		}
		switch string([]byte{upper(text[j+1]), upper(text[j+2])}) {
		case "2F", "3F", "23", "26":
			return nil // the end of the authority
		case "3A":
			if colon < 0 {
				colon = j
			}
		case "40":
			if colon < 0 {
				continue // user%40example.com as the user name
			}
			if pw := text[colon+3 : j]; pw == "" || placeholder(pw) {
				return nil
			}
			return []int{st, j, s, j}
		}
	}
	return nil
}
