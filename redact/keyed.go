package redact

import (
	"strings"
)

// Kinds of the context rules.
const (
	KindCookie     = "cookie"
	KindSession    = "session"
	KindSignature  = "signature"
	KindCredential = "credential"
)

// keyWords are the words that, ending a key, make its value a secret. A keyword may sit
// inside a longer key (DB_PASSWORD, dbPassword, x-auth-token, SharedAccessKey); keyOK
// decides from the whole key.
var keyWords = []string{
	"password", "passwd", "passphrase", "passwort", "pwd", "pass",
	"secret", "token", "key", "auth", "credentials", "credential",
	"cookie", "sessionid", "session_id", "session-id", "session", "sessid", "signature", "sig", "pat",
}

// shortKeyWords must start a word of the key (after a separator, a case change or the
// key's start): pass in bypass, sig in config, auth in oauth are not keys.
var shortKeyWords = map[string]bool{"pass": true, "pwd": true, "auth": true, "sig": true, "pat": true, "sessid": false}

// notSecretPrev are words that, just before the keyword, make the key name something
// else: max_token, boarding_pass, first_pass, oauth.
var notSecretPrev = map[string]map[string]bool{
	"token": set("max", "min", "num", "total", "prompt", "completion", "input", "output", "count", "bos", "eos",
		"pad", "unk", "sep", "cls", "mask", "start", "end", "special", "stop", "next", "page", "continuation",
		"last", "first", "sync", "cancellation", "cancel", "reasoning", "cached", "sampled", "vocab", "word"),
	"pass": set("boarding", "day", "season", "bus", "hall", "first", "second", "single", "multi", "one",
		"two", "by", "com", "sur", "over", "under", "tres", "test", "dry", "render"),
	"auth":    set("o", "two", "2", "multi", "use", "require", "requires", "needs", "basic", "no", "skip"),
	"session": set("training", "study", "chat", "practice", "new", "last", "current", "q", "tmux", "screen"),
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// secretKeySuffixes are the keys ending in "key" that name a secret (normalised: lower
// case, without '_', '-' and '.').
var secretKeySuffixes = []string{
	"apikey", "secretkey", "privatekey", "privkey", "accesskey", "signingkey", "encryptionkey",
	"masterkey", "accountkey", "appkey", "applicationkey", "clientkey", "authkey", "serverkey",
	"webhookkey", "subscriptionkey", "hmackey", "sharedkey", "storagekey", "adminkey",
	"servicekey", "licensekey", "functionkey", "functionskey", "encryptkey", "decryptkey",
	"secretaccesskey", "sharedaccesskey", "deploykey", "sshkey", "rsakey", "userkey", "devkey",
	"restkey", "mgmtkey", "managementkey", "ingestkey", "licencekey",
}

// keyKindOf names the kind of the secret held by a key whose last keyword is word.
func keyKindOf(word, key string) string {
	k := normKey(key)
	switch word {
	case "password", "passwd", "passphrase", "passwort", "pwd", "pass":
		return KindPassword
	case "token", "auth", "pat":
		return KindToken
	case "cookie":
		return KindCookie
	case "session", "sessionid", "session_id", "session-id", "sessid":
		return KindSession
	case "sig", "signature":
		return KindSignature
	case "credential", "credentials":
		return KindCredential
	case "key":
		switch {
		case strings.Contains(k, "awssecret") || strings.HasSuffix(k, "secretaccesskey"):
			return KindAWSSecretKey
		case strings.HasSuffix(k, "privatekey") || strings.HasSuffix(k, "privkey"):
			return KindPrivateKey
		case strings.HasSuffix(k, "apikey"):
			return KindAPIKey
		}
	}
	return KindSecret
}

// keyMatch is a key/value pair found by matchKeyed.
type keyMatch struct {
	keyStart, wordStart, wordEnd int
	word                         string
	sep                          string // the separator, spaces included
	quote                        byte   // the quote around the value ('\\' for \"), or 0
	s, e                         int    // the value
	eol                          bool   // a bare value read to the end of its line
	block                        bool   // a YAML block or plain scalar on the lines below the key
}

// wordAt returns the longest keyword that starts at st and ends the key there.
func wordAt(text string, st int) string {
	best := ""
	for _, w := range keyWords {
		if len(w) > len(best) && st+len(w) <= len(text) && equalFoldASCII(text[st:st+len(w)], w) {
			e := st + len(w)
			if e < len(text) && (isWordByte(text[e]) || text[e] == '-') {
				continue // not the end of the key
			}
			best = w
		}
	}
	return best
}

// keyWordsOf splits a key into lower-case words at separators and case changes:
// dbPassword -> db password, X-Api-Key -> x api key.
func keyWordsOf(key string) []string {
	var out []string
	start := 0
	flush := func(i int) {
		if i > start {
			out = append(out, strings.ToLower(key[start:i]))
		}
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '_' || c == '-' || c == '.' {
			flush(i)
			start = i + 1
			continue
		}
		if i > start && c >= 'A' && c <= 'Z' && key[i-1] >= 'a' && key[i-1] <= 'z' {
			flush(i)
			start = i
		}
	}
	flush(len(key))
	return out
}

// matchKeyed reads a key=value pair whose key ends with the keyword at st, in any of the
// forms key=value, key: value, "key": "value", 'key' => 'value', key := "value",
// <key>value</key>; it returns nil when there is none.
func matchKeyed(text string, st int) *keyMatch {
	w := wordAt(text, st)
	if w == "" {
		return nil
	}
	km := &keyMatch{wordStart: st, wordEnd: st + len(w), word: w}
	// The whole key.
	ks := st
	for ks > 0 {
		c := text[ks-1]
		if !(isWordByte(c) || c == '-' || c == '.') {
			break
		}
		ks--
	}
	km.keyStart = ks
	key := text[ks:km.wordEnd]
	if ks > 0 && (text[ks-1] == '/' || text[ks-1] == '\\' && !(ks > 1 && text[ks-2] == '\\') && !escapedQuoteAt(text, ks-1)) {
		return nil // /etc/passwd, C:\secret: a path, not a key
	}
	if !keyOK(text, st, w, key) {
		return nil
	}
	// The separator.
	i := km.wordEnd
	xml := ks > 0 && text[ks-1] == '<'
	if i+1 < len(text) && text[i] == '\\' && text[i+1] == '"' {
		i += 2
	} else if i < len(text) && (text[i] == '"' || text[i] == '\'') {
		i++
	}
	sepStart := i
	for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	switch {
	case xml && i < len(text) && text[i] == '>' && i == km.wordEnd:
		i++
	case strings.HasPrefix(text[i:], ":="), strings.HasPrefix(text[i:], "=>"):
		i += 2
	case i < len(text) && (text[i] == ':' || text[i] == '='):
		if i+1 < len(text) && text[i+1] == text[i] {
			return nil // ==, ::
		}
		i++
	case strings.HasPrefix(text[i:], "："), strings.HasPrefix(text[i:], "＝"):
		i += len("：") // full-width colon and equals sign
	default:
		return nil
	}
	for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	km.sep = text[sepStart:i]
	if i >= len(text) {
		return nil
	}
	// The value.
	switch {
	case xml && strings.HasSuffix(km.sep, ">"):
		end := strings.Index(text[i:min(len(text), i+4096)], "</")
		if end <= 0 {
			return nil
		}
		km.s, km.e, km.quote = i, i+end, '<'
	case text[i] == '\\' && i+1 < len(text) && text[i+1] == '"':
		km.s, km.e = i+2, endEscapedQuoted(text, i+2)
		km.quote = '\\'
	case text[i] == '"' || text[i] == '\'' || text[i] == '`':
		km.s, km.e = i+1, endQuoted(text, i+1, text[i])
		km.quote = text[i]
	default:
		km.s = i
		km.eol = eolValue(text, km, key)
		km.e = endBare(text, km, i)
		if km.eol && strings.Contains(km.sep, ":") {
			if s, e := yamlBlock(text, km); e > s {
				km.s, km.e, km.block = s, e, true
			}
		}
	}
	if km.e <= km.s {
		return nil
	}
	return km
}

// keyOK reports whether key, ending with the keyword w at st, names a secret.
func keyOK(text string, st int, w, key string) bool {
	words := keyWordsOf(key)
	prev := ""
	if len(words) >= 2 {
		prev = words[len(words)-2]
	}
	if shortKeyWords[w] && st > 0 {
		b := text[st-1]
		boundary := st == keyStartOf(text, st) || b == '_' || b == '-' || b == '.' ||
			b >= 'a' && b <= 'z' && text[st] >= 'A' && text[st] <= 'Z'
		if !boundary {
			return false
		}
	}
	switch w {
	case "key":
		return hasAnySuffix(normKey(key), secretKeySuffixes)
	case "token", "pass", "auth", "session":
		if notSecretPrev[w][prev] {
			return false
		}
		if len(words) > 0 && words[len(words)-1] != w && w != "token" && w != "session" {
			return false // bypass, oauth: the keyword is not a word of its own
		}
	case "sig", "pat":
		if len(words) > 0 && words[len(words)-1] != w {
			return false
		}
	}
	return true
}

func keyStartOf(text string, st int) int {
	ks := st
	for ks > 0 {
		c := text[ks-1]
		if !(isWordByte(c) || c == '-' || c == '.') {
			break
		}
		ks--
	}
	return ks
}

// escapedQuoteAt reports a backslash at i that escapes a quote (\"key\" in JSON text
// inside a JSON string).
func escapedQuoteAt(text string, i int) bool {
	return i+1 < len(text) && text[i] == '\\' && text[i+1] == '"'
}

// endQuoted returns the end of a value quoted by q that starts at i: the closing quote,
// skipping backslash escapes, or the end of the line when the quote is never closed.
func endQuoted(text string, i int, q byte) int {
	for j := i; j < len(text); j++ {
		switch text[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j
		case '\n':
			return j
		}
	}
	return len(text)
}

// endEscapedQuoted returns the end of a value quoted by \" inside a JSON string (JSON text
// inside JSON): the \" that closes it. Decoding one level of escapes, a \\\" is a quote
// escaped in the inner string, not the end.
func endEscapedQuoted(text string, i int) int {
	innerEscaped := false
	for j := i; j < len(text); j++ {
		c := text[j]
		if c == '\n' {
			return j
		}
		if c == '\\' && j+1 < len(text) {
			d := text[j+1]
			j++
			switch d {
			case '"':
				if !innerEscaped {
					return j - 1
				}
				innerEscaped = false
			case '\\':
				innerEscaped = !innerEscaped
			default:
				innerEscaped = false
			}
			continue
		}
		if c == '"' {
			return j
		}
		innerEscaped = false
	}
	return len(text)
}

// eolValue reports whether a bare value after key reads to the end of its line: a header
// (Cookie: a=b; c=d, X-Api-Key: ...) or a YAML key at the start of a line
// (password: correct horse battery staple). A capitalised single word after a colon in
// running text ("Password: must be ...") is not.
func eolValue(text string, km *keyMatch, key string) bool {
	if strings.Contains(km.sep, "=") {
		return false
	}
	if km.word == "cookie" {
		return true
	}
	if strings.Contains(key, "-") {
		return true
	}
	if !lineStart(text, km.keyStart) {
		return false
	}
	if strings.ContainsAny(key, "_.") {
		return true
	}
	return key == strings.ToLower(key)
}

// lineStart reports whether only spaces, a list dash or an opening quote stand between
// the start of the line (or of an escaped \n) and i.
func lineStart(text string, i int) bool {
	for j := i - 1; j >= 0 && i-j < 200; j-- {
		switch text[j] {
		case ' ', '\t', '-', '"', '\'':
			continue
		case '\n':
			return true
		case 'n', 'r':
			return j > 0 && text[j-1] == '\\'
		}
		return false
	}
	return i < 200
}

// endBare returns the end of an unquoted value starting at i.
func endBare(text string, km *keyMatch, i int) int {
	j := i
	if km.eol {
		quoted := km.keyStart > 0 && text[km.keyStart-1] == '\''
		for ; j < len(text); j++ {
			c := text[j]
			if c == '\n' || c == '\r' || c == '"' || quoted && c == '\'' {
				break
			}
			if c == '\\' && j+1 < len(text) && strings.IndexByte("nrt\"'", text[j+1]) >= 0 {
				break
			}
			if c == '#' && j > i && text[j-1] == ' ' && km.word != "cookie" {
				break // a YAML comment
			}
		}
		for j > i && (text[j-1] == ' ' || text[j-1] == '\t') {
			j--
		}
		return j
	}
	// A pair in a ;-separated connection string may hold spaces: read to the ';'.
	conn := km.keyStart > 0 && text[km.keyStart-1] == ';' && km.sep == "="
	for ; j < len(text); j++ {
		c := text[j]
		if c == ' ' || c == '\t' {
			if conn {
				continue
			}
			break
		}
		if c == '\n' || c == '\r' || strings.IndexByte("\"'`,;&<>)]}", c) >= 0 {
			break
		}
		if c == '\\' && j+1 < len(text) && strings.IndexByte("nrt\"'", text[j+1]) >= 0 {
			break
		}
	}
	for j > i && strings.IndexByte(".:, \t", text[j-1]) >= 0 {
		j--
	}
	return j
}

// keyedPattern redacts the value of any key that names a secret.
func keyedPattern() *pattern {
	return &pattern{
		anchors: keyWords,
		fold:    true,
		split:   true,
		match: func(text string, st int) []int {
			km := matchKeyed(text, st)
			if km == nil {
				if w := wordAt(text, st); w != "" {
					return matchProse(text, st, w)
				}
				return nil
			}
			if !validKeyed(text, km) {
				return nil
			}
			return []int{km.keyStart, km.e, km.s, km.e, kindIndex(keyKindOf(km.word, text[km.keyStart:km.wordEnd])), 0}
		},
		groups: []int{1},
		kindOf: func(text string, m []int) string { return allKinds[m[4]] },
	}
}

// validKeyed vets the value of a key=value match.
func validKeyed(text string, km *keyMatch) bool {
	key := text[km.keyStart:km.wordEnd]
	word := km.word
	v := strings.TrimSpace(withoutMarkers(text[km.s:km.e]))
	if v != text[km.s:km.e] && !hasAlnum(strings.NewReplacer(`\n`, "", `\r`, "", `\t`, "").Replace(v)) {
		return false // nothing left but markers
	}
	if v == "" {
		return false
	}
	lv := strings.ToLower(v)
	if placeholder(v) || notSecretWords[lv] {
		return false
	}
	if km.block {
		return true
	}
	if word == "pass" {
		// pass: 97 tests, fail: 3 -- a test runner's counter, not a password.
		f, _, _ := strings.Cut(v, " ")
		if f = strings.TrimRight(f, ",;"); isDigits(f) && (f != v || restOfLine(text, km.e) != "") {
			return false
		}
	}
	nk := normKey(key)
	if normKey(v) == nk || normKey(v) == word {
		return false // password="password": a field name
	}
	if word == "pwd" && strings.ContainsAny(v[:1], "/~.") {
		return false // PWD=/work/dir in an environment dump
	}
	kind := keyKindOf(word, key)
	spaces := strings.ContainsAny(v, " \t")
	switch kind {
	case KindToken:
		if len(keyWordsOf(key)) <= 1 && !tokenLike(v) {
			return false // "token": "Hello" (logprobs), token: a word
		}
		if isDigits(v) && len(v) < 6 {
			return false // max_token=512
		}
	case KindSession, KindSignature:
		if len(v) < 8 || !tokenLike(v) {
			return false // "session": "morning", signature: def f(x)
		}
	case KindCredential:
		if lv == "include" || lv == "omit" || lv == "same-origin" {
			return false // fetch's credentials option
		}
	}
	if spaces && km.quote == 0 && !km.eol && !strings.HasPrefix(text[km.keyStart-min(km.keyStart, 1):], ";") {
		return false
	}
	if spaces && kind != KindPassword && kind != KindSecret && kind != KindCookie && kind != KindCredential && kind != KindToken {
		return false // keys and signatures have no spaces
	}
	if km.quote != 0 {
		return true
	}
	// Unquoted values.
	if kind == KindPassword && strings.Count(v, " ") >= 3 && !km.eol {
		return false // a sentence, not a password
	}
	envStyle := km.sep == "=" && key == strings.ToUpper(key)
	if !envStyle && identifierLike(v) {
		return false
	}
	if km.eol {
		return true
	}
	// After a colon, or an '=' with spaces around it, an unquoted value followed by more
	// words on its line is prose unless it looks like a secret.
	if strings.Contains(km.sep, ":") && !strings.Contains(km.sep, "=") || strings.Contains(km.sep, " ") {
		if rest := restOfLine(text, km.e); rest != "" && !secretish(v) {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// withoutMarkers returns v without the markers in it.
func withoutMarkers(v string) string {
	if !strings.Contains(v, markerPrefix) {
		return v
	}
	var b strings.Builder
	last := 0
	for _, sp := range markerSpans(v) {
		b.WriteString(v[last:sp[0]])
		last = sp[1]
	}
	b.WriteString(v[last:])
	return b.String()
}

// yamlBlock returns the value of a YAML key whose value is on the lines below it: a block
// scalar (password: | or >, with its chomping and indentation indicators) or a plain
// scalar continued on a more indented line (password:\n  value). The value is the more
// indented lines that follow, from the first one's text to the last one's end; a nested
// mapping or list is no value. It returns s == e when there is none.
func yamlBlock(text string, km *keyMatch) (s, e int) {
	ind := strings.TrimRight(text[km.s:km.e], " \t")
	if c, _, _ := strings.Cut(ind, " #"); c != ind {
		ind = strings.TrimRight(c, " \t")
	}
	plain := ind == ""
	if !plain && !(len(ind) <= 3 && (ind[0] == '|' || ind[0] == '>') && strings.Trim(ind[1:], "+-0123456789") == "") {
		return 0, 0
	}
	ls := strings.LastIndexByte(text[:km.keyStart], '\n') + 1
	keyIndent := km.keyStart - ls
	// The rest of the key's line, then the lines below.
	nl := strings.IndexByte(text[km.e:], '\n')
	if nl < 0 {
		return 0, 0
	}
	s, e = -1, -1
	for i := km.e + nl + 1; i < len(text); {
		le := strings.IndexByte(text[i:], '\n')
		if le < 0 {
			le = len(text)
		} else {
			le += i
		}
		line := strings.TrimRight(text[i:le], " \t\r")
		body := strings.TrimLeft(line, " ")
		if body != "" {
			if len(line)-len(body) <= keyIndent {
				break
			}
			if s < 0 {
				if plain && (body[0] == '#' || body[0] == '-' || strings.Contains(body, ": ") || strings.HasSuffix(body, ":")) {
					return 0, 0 // a nested mapping or list
				}
				s = i + len(line) - len(body)
			}
			e = i + len(line)
		}
		i = le + 1
	}
	if s < 0 {
		return 0, 0
	}
	return s, e
}
