package redact

import (
	"regexp"
	"strings"
)

// matchFlag reads a long command-line flag whose name says secret and its value:
// --password X, --password=X, --db-password 'X', --api-key=X, --cookie "a=b".
func matchFlag(text string, st int) []int {
	if st > 0 && !strings.ContainsRune(" \t\n\"'=", rune(text[st-1])) {
		return nil
	}
	i := st + 2
	ns := i
	for i < len(text) && (isWordByte(text[i]) || text[i] == '-') {
		i++
	}
	name := text[ns:i]
	if name == "" {
		return nil
	}
	// The flag's last keyword: the longest keyword that ends the name.
	w := ""
	for _, k := range keyWords {
		if len(k) > len(w) && len(name) >= len(k) && equalFoldASCII(name[len(name)-len(k):], k) {
			ws := len(name) - len(k)
			if ws > 0 && name[ws-1] != '-' && name[ws-1] != '_' && shortKeyWords[k] {
				continue
			}
			w = k
		}
	}
	if w == "" || !keyOK(name, len(name)-len(w), w, name) {
		return nil
	}
	eq := false
	switch {
	case i < len(text) && text[i] == '=':
		i++
		eq = true
	case i < len(text) && (text[i] == ' ' || text[i] == '\t'):
		for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
			i++
		}
	default:
		return nil
	}
	if i >= len(text) {
		return nil
	}
	var s, e int
	quoted := false
	switch c := text[i]; c {
	case '"', '\'':
		s, e, quoted = i+1, endQuoted(text, i+1, c), true
	default:
		if c == '-' && !eq {
			return nil // the next flag
		}
		s = i
		e = s
		for e < len(text) && !strings.ContainsRune(" \t\n\r\"'`;&|<>", rune(text[e])) {
			if text[e] == '\\' && e+1 < len(text) && strings.IndexByte("nrt\"'", text[e+1]) >= 0 {
				break
			}
			e++
		}
	}
	if e <= s {
		return nil
	}
	v := text[s:e]
	if placeholder(v) || notSecretWords[strings.ToLower(v)] {
		return nil
	}
	kind := keyKindOf(w, name)
	if !quoted && identifierLike(v) {
		return nil
	}
	if kind == KindToken && !tokenLike(v) {
		return nil // --token flag
	}
	if (kind == KindSession || kind == KindSignature) && !tokenLike(v) {
		return nil
	}
	return []int{st, e, s, e, kindIndex(kind), 0}
}

// programBefore reports whether one of progs is a word of the line before i (within 400
// bytes): the command a short flag belongs to.
func programBefore(text string, i int, progs ...string) bool {
	ls := max(0, i-400)
	if nl := strings.LastIndexByte(text[ls:i], '\n'); nl >= 0 {
		ls += nl + 1
	}
	line := text[ls:i]
	for _, p := range progs {
		for off := 0; ; {
			j := strings.Index(line[off:], p)
			if j < 0 {
				break
			}
			j += off
			if (j == 0 || !isWordByte(line[j-1])) && (j+len(p) == len(line) || !isWordByte(line[j+len(p)])) {
				return true
			}
			off = j + 1
		}
	}
	return false
}

// matchShortFlag reads the secret given to a short flag of a command that takes a password
// or credentials on its command line: mysql -pPW, sshpass -p PW, docker login -p PW,
// redis-cli -a PW, curl -u user:PW.
func matchShortFlag(text string, st int) []int {
	if st > 0 && !strings.ContainsRune(" \t\"'", rune(text[st-1])) {
		return nil
	}
	if st+2 >= len(text) {
		return nil
	}
	f := text[st+1]
	i := st + 2
	attached := text[i] != ' ' && text[i] != '\t'
	if !attached {
		for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
			i++
		}
	}
	kind := KindPassword
	switch f {
	case 'p':
		switch {
		case attached && programBefore(text, st, "mysql", "mariadb", "mysqldump", "mysqladmin", "mysqlimport", "mysqlsh"):
		case !attached && programBefore(text, st, "sshpass", "login"):
		default:
			return nil
		}
	case 'a':
		if attached || !programBefore(text, st, "redis-cli", "valkey-cli") {
			return nil
		}
	case 'u':
		if !programBefore(text, st, "curl", "wget", "http") {
			return nil
		}
		kind = KindBasicAuth
	default:
		return nil
	}
	if i >= len(text) {
		return nil
	}
	s, e := i, i
	if c := text[i]; c == '"' || c == '\'' {
		s = i + 1
		e = endQuoted(text, s, c)
	} else {
		for e < len(text) && !strings.ContainsRune(" \t\n\r\"'`;&|<>", rune(text[e])) {
			e++
		}
	}
	if e <= s || text[s] == '-' {
		return nil
	}
	if f == 'u' {
		c := strings.IndexByte(text[s:e], ':')
		if c < 0 || s+c+1 >= e {
			return nil // curl -u user: asks for the password
		}
		s += c + 1
	}
	v := text[s:e]
	if placeholder(v) {
		return nil
	}
	return []int{st, e, s, e, kindIndex(kind), 0}
}

// goDSN matches user:password@tcp(host:port)/db, the DSN form of Go's MySQL driver.
var goDSN = regexp.MustCompile(`^([^\s"'=:@/]*:[^\s"']+)@(?:tcp|unix|udp|tcp6)\(`)

func matchGoDSN(text string, st int) []int {
	lim := min(len(text), st+400)
	m := goDSN.FindStringSubmatchIndex(text[st:lim])
	if m == nil {
		return nil
	}
	pw := text[st+m[2] : st+m[3]]
	if placeholder(pw[strings.IndexByte(pw, ':')+1:]) {
		return nil
	}
	return []int{st, st + m[1], st + m[2], st + m[3], kindIndex(KindConnectionString), 0}
}

// tokenStartBefore finds where the token holding the anchor at pos starts.
func tokenStartBefore(text string, pos int) int {
	st := pos
	for st > 0 && pos-st < 300 {
		c := text[st-1]
		if c == ' ' || c == '\t' || c == '\n' || c == '"' || c == '\'' || c == '=' || c == '`' || c == '(' || c == ',' || c == '>' {
			break
		}
		st--
	}
	return st
}

// openSSLPass matches -passin pass:X and -passout pass:X.
var openSSLPass = `-pass(?:in|out)?[ \t]+pass:([^\s"']+)`

// bareAWSSecret finds 40-character base64 strings with no label, shaped like an AWS
// secret access key: bounded by non-base64 bytes, with at least eight upper-case and
// eight lower-case letters and a digit (a random 40-character key fails this about 3
// times in 1000), and not hexadecimal (commit hashes).
//
// Every run of 40 or more base64 bytes holds a multiple of 40, so only the bytes at
// multiples of 40 are probed, and the run is measured around a probe that hits.
func bareAWSSecret(text string) [][]int {
	var out [][]int
	n := len(text)
	for p := 0; p < n; p += 40 {
		if !isB64(text[p]) {
			continue
		}
		i, j := p, p+1
		for i > 0 && isB64(text[i-1]) {
			i--
		}
		for j < n && isB64(text[j]) {
			j++
		}
		if i > 0 && text[i-1] == '\\' && (text[i] == 'n' || text[i] == 'r' || text[i] == 't') {
			i++ // after an escaped line break in JSON text
		}
		if j-i == 40 && (i == 0 || !isB64Edge(text[i-1])) && (j == n || !isB64Edge(text[j])) && awsShaped(text[i:j]) {
			if len(out) == 0 || out[len(out)-1][0] != i {
				out = append(out, []int{i, j})
			}
		}
		if j > p+40 {
			p = j - j%40 - 40 // the next probe past this run
		}
	}
	return out
}

var b64Table = func() (t [256]bool) {
	for b := 0; b < 256; b++ {
		t[b] = b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '+' || b == '/'
	}
	return t
}()

func isB64(b byte) bool { return b64Table[b] }

// isB64Edge reports bytes that continue a token: a 40-byte run next to them is part of
// something longer.
func isB64Edge(b byte) bool {
	return b == '=' || b == '_' || b == '-' || b == '.' || b == '%'
}

func awsShaped(v string) bool {
	c := classify(v)
	if c.upper < 8 || c.lower < 8 || c.digit < 1 {
		return false
	}
	if strings.Count(v, "/") > 3 {
		return false // a path
	}
	return true
}
