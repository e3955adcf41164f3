package redact

import "strings"

// Labels without an assignment: a keyword that names a secret followed by the secret
// after spaces, in prose ("my password is X", "the auth token X", "API key X"), config
// files without a separator (.netrc "login bob password X", a Dockerfile's "ENV KEY X")
// and SQL ("PASSWORD 'X'", "SET PASSWORD FOR u = 'X'", "IDENTIFIED BY 'X'").

// proseWords are the keywords a label may end with. Short or ambiguous keywords (pass,
// pwd, auth, session, sig, cookie) are verbs or counters in prose and are left out.
var proseWords = map[string]bool{
	"password": true, "passwd": true, "passphrase": true, "passwort": true,
	"secret": true, "token": true, "key": true, "pat": true,
}

var passwordWords = map[string]bool{"password": true, "passwd": true, "passphrase": true, "passwort": true}

// matchProse reads a label ending with the keyword w at st and the value after it; it
// returns the submatch slice of the keyed pattern, or nil.
//
// The value must look like what the label names: after "is", "was", ':' or '=' a password
// must have a digit, a symbol or an inner capital and six or more bytes, and any other
// secret must be token-like (eight or more bytes with digits or mixed case); with only
// spaces between, a password needs eight or more such bytes and any other secret sixteen.
// A quoted password is taken whole (SQL). In .netrc lines and Dockerfile ENV lines the
// value is taken as written.
func matchProse(text string, st int, w string) []int {
	if !proseWords[w] {
		return nil
	}
	we := st + len(w)
	ks := keyStartOf(text, st)
	if ks > 0 && strings.IndexByte("/\\.$%{<[", text[ks-1]) >= 0 {
		return nil // a path, a variable, markup
	}
	key := text[ks:we]
	// The label: the key, and the word before it when the key is the keyword alone
	// ("API key", "auth token", "devops PAT").
	label := key
	if ks == st && ks >= 2 && text[ks-1] == ' ' {
		if ps := keyStartOf(text, ks-1); ps < ks-1 {
			label = text[ps:ks-1] + "_" + key
		}
	}
	if !keyOK(label, len(label)-len(w), w, label) {
		return nil
	}
	ls := max(0, ks-200)
	line := text[ls:ks]
	if nl := strings.LastIndexByte(line, '\n'); nl >= 0 {
		line = line[nl+1:]
	} else if ls > 0 {
		line = " " + line // not the line's start
	}
	env := strings.TrimLeft(line, " \t") == "ENV " // Dockerfile: ENV KEY value
	netrc := passwordWords[w] && (hasWord(line, "login") || hasWord(line, "machine"))
	// The separator.
	i := skipBlanks(text, we)
	verb := false
	if i == we && !strings.HasPrefix(text[i:], "：") && (i >= len(text) || strings.IndexByte(":=(", text[i]) < 0) {
		return nil // the keyword glued to something else
	}
	switch {
	case hasWordAt(text, i, "is"), hasWordAt(text, i, "was"):
		i += strings.IndexByte(text[i:], 's') + 1
		if i < len(text) && text[i] == ':' {
			i++
		}
		verb = true
	case strings.HasPrefix(text[i:], "："):
		i += len("：")
		verb = true
	case i < len(text) && (text[i] == ':' || text[i] == '='):
		i++
		verb = true
	case passwordWords[w] && hasWordAt(text, i, "for"):
		// SET PASSWORD FOR 'user'@'host' = 'X'
		eq := strings.IndexByte(text[i:min(len(text), i+200)], '=')
		if eq < 0 || strings.Contains(text[i:i+eq], "\n") {
			return nil
		}
		i += eq + 1
		verb = true
	case passwordWords[w] && strings.HasPrefix(text[i:], "("):
		i++ // PASSWORD('X')
	}
	i = skipBlanks(text, i)
	if i >= len(text) {
		return nil
	}
	// The value.
	var s, e int
	quoted := false
	if q := text[i]; q == '\'' || q == '"' || q == '`' {
		s, e, quoted = i+1, endQuoted(text, i+1, q), true
		if e >= len(text) || text[e] != q {
			return nil
		}
	} else {
		s, e = i, i
		if env {
			e = s + len(restOfLine(text, s))
		} else {
			for e < len(text) && !strings.ContainsRune(" \t\r\n\"'`,;<>)", rune(text[e])) {
				e++
			}
			for e > s && strings.IndexByte(".:!?", text[e-1]) >= 0 {
				e--
			}
		}
	}
	if e <= s {
		return nil
	}
	v := text[s:e]
	if placeholder(v) || notSecretWords[strings.ToLower(v)] || strings.Contains(v, markerPrefix) {
		return nil
	}
	switch {
	case env || netrc:
	case quoted && passwordWords[w]:
	case passwordWords[w]:
		min := 8
		if verb {
			min = 6
		}
		if len(v) < min || !secretish(v) || identifierLike(v) {
			return nil
		}
	default:
		min := 16
		if verb {
			min = 8
		}
		if len(v) < min || !tokenLike(v) || identifierLike(v) || !tokenChars(v) {
			return nil
		}
	}
	return []int{ks, e, s, e, kindIndex(keyKindOf(w, label)), 0}
}

// tokenChars reports a value made of the bytes of generated tokens.
func tokenChars(v string) bool {
	for i := 0; i < len(v); i++ {
		if !isTokenByte(v[i]) && strings.IndexByte("+/=.~", v[i]) < 0 {
			return false
		}
	}
	return true
}

func skipBlanks(text string, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	return i
}

// hasWordAt reports the word w (any case) at i, followed by a non-word byte.
func hasWordAt(text string, i int, w string) bool {
	return len(text) >= i+len(w) && equalFoldASCII(text[i:i+len(w)], w) &&
		(i+len(w) == len(text) || !isWordByte(text[i+len(w)]))
}

// hasWord reports the word w (lower case) in s.
func hasWord(s, w string) bool {
	for off := 0; ; {
		j := strings.Index(s[off:], w)
		if j < 0 {
			return false
		}
		j += off
		if (j == 0 || !isWordByte(s[j-1])) && (j+len(w) == len(s) || !isWordByte(s[j+len(w)])) {
			return true
		}
		off = j + 1
	}
}

// sqlIdentified matches IDENTIFIED [WITH plugin] BY [PASSWORD] 'X' of CREATE USER and ALTER
// USER. An unquoted value is taken only after the keywords in upper case (Oracle SQL), so
// "identified by the team" stays.
var sqlIdentified = anchored(`(?i:identified)(?:[ \t]+(?i:with)[ \t]+[A-Za-z0-9_]+)?[ \t]+(?i:by)[ \t]+(?:(?i:password)[ \t]+)?(?:'([^'\n]*)'|"([^"\n]*)"|([^\s;'"]+))`)

func matchSQLIdentified(text string, st int) []int {
	m := sqlIdentified.FindStringSubmatchIndex(text[st:min(len(text), st+400)])
	if m == nil {
		return nil
	}
	for i := range m {
		if m[i] >= 0 {
			m[i] += st
		}
	}
	for g := 1; g <= 3; g++ {
		s, e := m[2*g], m[2*g+1]
		if s < 0 {
			continue
		}
		v := text[s:e]
		if v == "" || placeholder(v) {
			return nil
		}
		if g == 3 && (!strings.HasPrefix(text[st:], "IDENTIFIED") || !secretish(v)) {
			return nil
		}
		return []int{m[0], m[1], s, e}
	}
	return nil
}
