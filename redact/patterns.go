package redact

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// The built-in kinds.
const (
	KindPrivateKey       = "private_key"
	KindAnthropicKey     = "anthropic_key"
	KindOpenAIKey        = "openai_key"
	KindGitHubToken      = "github_token"
	KindGitLabToken      = "gitlab_token"
	KindSlackWebhook     = "slack_webhook"
	KindSlackToken       = "slack_token"
	KindStripeKey        = "stripe_key"
	KindAWSAccessKey     = "aws_access_key"
	KindAWSSecretKey     = "aws_secret_key"
	KindGoogleAPIKey     = "google_api_key"
	KindHuggingFaceToken = "huggingface_token"
	KindSendGridKey      = "sendgrid_key"
	KindNPMToken         = "npm_token"
	KindPyPIToken        = "pypi_token"
	KindTwilioKey        = "twilio_key"
	KindJWT              = "jwt"
	KindBasicAuth        = "basic_auth"
	KindBearerToken      = "bearer_token"
	KindConnectionString = "connection_string"
	KindPassword         = "password"
	KindSecret           = "secret"
	KindAPIKey           = "api_key"
	KindToken            = "token"
)

// kindList is every kind the built-in patterns can produce, in pattern order.
var kindList = []string{
	KindPrivateKey, KindAnthropicKey, KindOpenAIKey, KindGitHubToken, KindGitLabToken,
	KindSlackWebhook, KindSlackToken, KindStripeKey, KindAWSAccessKey, KindGoogleAPIKey, KindHuggingFaceToken, KindSendGridKey, KindNPMToken, KindPyPIToken,
	KindTwilioKey, KindJWT, KindBasicAuth, KindBearerToken, KindConnectionString,
	KindPassword, KindSecret, KindAPIKey, KindToken, KindAWSSecretKey, KindPrivateKey,
}

// anchored compiles a built-in expression to be tried at a candidate start.
func anchored(src string) *regexp.Regexp { return regexp.MustCompile(`^(?:` + src + `)`) }

// builtins run in this order: whole PEM blocks first, then token formats with a
// distinctive prefix (anthropic before openai, JWT before bearer), then contexts
// (headers, URLs, assignments). A later pattern never matches inside an earlier marker.
var builtins = []*pattern{
	{
		kind:    KindPrivateKey,
		re:      anchored(`-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z)`),
		anchors: []string{"-----BEGIN"},
		window:  -1,
	},
	{
		kind:      KindAnthropicKey,
		re:        anchored(`sk-ant-[A-Za-z0-9_-]{20,}`),
		anchors:   []string{"sk-ant-"},
		wordStart: true,
	},
	{
		kind:      KindOpenAIKey,
		re:        anchored(`sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`),
		anchors:   []string{"sk-"},
		wordStart: true,
		valid: func(text string, _ []int, s, e int) bool {
			body := text[s+len("sk-") : e]
			for _, p := range []string{"proj-", "svcacct-", "admin-"} {
				body = strings.TrimPrefix(body, p)
			}
			return looksRandom(body)
		},
	},
	{
		kind:      KindGitHubToken,
		re:        anchored(`(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b`),
		anchors:   []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		wordStart: true,
	},
	{
		kind:      KindGitLabToken,
		re:        anchored(`glpat-[A-Za-z0-9_-]{20,}`),
		anchors:   []string{"glpat-"},
		wordStart: true,
	},
	{
		kind:    KindSlackWebhook,
		re:      anchored(`https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{16,}`),
		anchors: []string{"https://hooks.slack.com/"},
	},
	{
		kind:      KindSlackToken,
		re:        anchored(`xox[abposr]-[A-Za-z0-9-]{10,}`),
		anchors:   []string{"xox"},
		wordStart: true,
	},
	{
		kind:      KindStripeKey,
		re:        anchored(`[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b`),
		anchors:   []string{"k_live_", "k_test_"},
		back:      1,
		wordStart: true,
	},
	{
		kind:      KindAWSAccessKey,
		re:        anchored(`(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`),
		anchors:   []string{"AKIA", "ASIA", "ABIA", "ACCA"},
		wordStart: true,
	},
	{
		kind:      KindGoogleAPIKey,
		re:        anchored(`AIza[0-9A-Za-z_-]{35}`),
		anchors:   []string{"AIza"},
		wordStart: true,
		valid: func(text string, _ []int, _, e int) bool {
			return e == len(text) || !isTokenByte(text[e])
		},
	},
	{
		kind:      KindHuggingFaceToken,
		re:        anchored(`hf_[A-Za-z0-9]{30,}\b`),
		anchors:   []string{"hf_"},
		wordStart: true,
		valid: func(text string, _ []int, s, e int) bool {
			c := classify(text[s+3 : e])
			return c.upper > 0 && c.lower > 0
		},
	},
	{
		kind:      KindSendGridKey,
		re:        anchored(`SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}`),
		anchors:   []string{"SG."},
		wordStart: true,
	},
	{
		kind:      KindNPMToken,
		re:        anchored(`npm_[A-Za-z0-9]{36}\b`),
		anchors:   []string{"npm_"},
		wordStart: true,
	},
	{
		kind:      KindPyPIToken,
		re:        anchored(`pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`),
		anchors:   []string{"pypi-AgEIcHlwaS5vcmc"},
		wordStart: true,
	},
	{
		kind:      KindTwilioKey,
		re:        anchored(`SK[0-9a-fA-F]{32}\b`),
		anchors:   []string{"SK"},
		wordStart: true,
		valid: func(text string, _ []int, s, e int) bool {
			c := classify(text[s+2 : e])
			return c.digit > 0 && c.upper+c.lower > 0
		},
	},
	{
		kind:      KindJWT,
		re:        anchored(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`),
		anchors:   []string{"eyJ"},
		window:    16384,
		wordStart: true,
	},
	{
		// Authorization: <scheme> <credentials>, or Authorization: <credentials>.
		re:        anchored(`(?i)authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:(basic|bearer|token|bot|apikey|key)[ \t]+)?([^\s"'\\,;]{8,})`),
		anchors:   []string{"authorization"},
		fold:      true,
		wordStart: true,
		groups:    []int{2},
		valid: func(text string, m []int, s, e int) bool {
			return !placeholder(text[s:e])
		},
		kindOf: func(text string, m []int) string {
			if m[2] < 0 {
				return KindToken
			}
			switch strings.ToLower(text[m[2]:m[3]]) {
			case "basic":
				return KindBasicAuth
			case "bearer":
				return KindBearerToken
			}
			return KindToken
		},
	},
	{
		// A bearer token outside an Authorization header: it must look random.
		kind:      KindBearerToken,
		re:        anchored(`(?i)bearer[ \t]+([A-Za-z0-9._~+/-]{16,}=*)`),
		anchors:   []string{"bearer"},
		fold:      true,
		wordStart: true,
		groups:    []int{1},
		valid: func(text string, _ []int, s, e int) bool {
			return classify(text[s:e]).digit > 0 && !placeholder(text[s:e])
		},
	},
	{
		// scheme://user:password@host: the user:password part.
		kind:    KindConnectionString,
		re:      anchored(`[A-Za-z][A-Za-z0-9+.-]{0,19}://([^\s:/@"'<>\[\]\\]*:[^\s/"'<>\[\]\\]+)@`),
		anchors: []string{"://"},
		start:   schemeStart,
		groups:  []int{1},
		valid: func(text string, _ []int, s, e int) bool {
			userinfo := text[s:e]
			pass := userinfo[strings.IndexByte(userinfo, ':')+1:]
			return !placeholder(pass)
		},
	},
	{
		// key=value, key: value, "key": "value" where the key names a secret. The match
		// starts at the last word of the key; validAssignment reads the whole key.
		re: anchored(`(?i)(password|passwd|passphrase|pwd|secret|token|key)` +
			`(\\?["']?)([ \t]*(?::=|=>|[:=])[ \t]*)` +
			`(?:\\?"([^"\\\n]*)\\?"|'([^'\n]*)'|([^\s"'\x60,;&)\]}<>{\[]*[^\s"'\x60,;&)\]}<>{\[.:]))`),
		anchors: []string{"password", "passwd", "passphrase", "pwd", "secret", "token", "key"},
		fold:    true,
		pre:     assignmentFollows,
		groups:  []int{4, 5, 6},
		valid:   validAssignment,
		kindOf: func(text string, m []int) string {
			return keyKind(text[m[2]:m[3]], assignedKey(text, m[2], m[3]))
		},
	},
	{
		// --password value, --token value on a command line.
		re:      anchored(`(?i)--(password|passwd|pass|passphrase|token|access-token|auth-token|api-key|apikey|secret|client-secret)[ \t]+([^\s"'\x60;&|<>]+)`),
		anchors: []string{"--"},
		groups:  []int{2},
		valid: func(text string, m []int, s, e int) bool {
			if m[0] > 0 && !strings.ContainsRune(" \t\n\"'", rune(text[m[0]-1])) {
				return false
			}
			v := text[s:e]
			if v[0] == '-' || placeholder(v) || identifierLike(v) {
				return false
			}
			if keyKind(flagWord(text[m[2]:m[3]]), text[m[2]:m[3]]) == KindToken {
				return tokenLike(v)
			}
			return true
		},
		kindOf: func(text string, m []int) string {
			return keyKind(flagWord(text[m[2]:m[3]]), text[m[2]:m[3]])
		},
	},
}

// assignmentFollows reports whether the keyword at st is followed by an optional closing
// quote and a ':' or '=' separator.
func assignmentFollows(text string, st int) bool {
	i := st
	for i < len(text) && (text[i] >= 'a' && text[i] <= 'z' || text[i] >= 'A' && text[i] <= 'Z') {
		i++
	}
	if i < len(text) && text[i] == '\\' {
		i++
	}
	if i < len(text) && (text[i] == '"' || text[i] == '\'') {
		i++
	}
	for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	return i < len(text) && (text[i] == ':' || text[i] == '=')
}

// schemeStart finds where the URL scheme before "://" at pos begins.
func schemeStart(text string, pos int) int {
	st := pos
	for st > 0 && pos-st < 20 {
		c := text[st-1]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-') {
			break
		}
		st--
	}
	if st == pos {
		return -1
	}
	return st
}

// assignedKey returns the whole key whose last word is text[s:e]: DB_PASSWORD, api_key,
// self.password.
func assignedKey(text string, s, e int) string {
	st := s
	for st > 0 {
		c := text[st-1]
		if !(isWordByte(c) || c == '-' || c == '.') {
			break
		}
		st--
	}
	return text[st:e]
}

// flagWord maps a command-line flag name to the last word of the matching key.
func flagWord(flag string) string {
	f := strings.ToLower(flag)
	switch {
	case strings.HasPrefix(f, "pass"):
		return "password"
	case strings.HasSuffix(f, "token"):
		return "token"
	case strings.HasSuffix(f, "key"):
		return "key"
	}
	return "secret"
}

// secretKeySuffixes are the keys ending in "key" that name a secret (normalised: lower
// case, without '_', '-' and '.').
var secretKeySuffixes = []string{"apikey", "secretkey", "privatekey", "privkey", "accesskey", "signingkey", "encryptionkey", "masterkey"}

// normKey lower-cases key and drops '_', '-' and '.'.
func normKey(key string) string {
	b := make([]byte, 0, len(key))
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '_', '-', '.':
		default:
			b = append(b, lowerByte(c))
		}
	}
	return string(b)
}

// keyKind names the kind of a secret from the last word of its key and the whole key.
func keyKind(word, key string) string {
	k := normKey(key)
	switch strings.ToLower(word) {
	case "password", "passwd", "passphrase", "pwd":
		return KindPassword
	case "token":
		return KindToken
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

// notSecretWords are values of secret-named keys that are types, keywords or prose.
var notSecretWords = map[string]bool{
	"null": true, "none": true, "nil": true, "true": true, "false": true, "undefined": true,
	"empty": true, "required": true, "optional": true, "str": true, "string": true,
	"int": true, "bytes": true, "bool": true, "any": true, "secretstr": true, "object": true,
	"redacted": true, "hidden": true, "masked": true, "n/a": true, "na": true, "tbd": true,
	"todo": true, "unset": true, "unknown": true, "default": true, "os.environ": true,
	"must": true, "should": true, "the": true, "your": true, "is": true, "are": true,
}

// validAssignment vets the value of a key=value match (groups 1 last word of the key,
// 2 closing quote, 3 separator, 4/5 quoted value, 6 bare value).
func validAssignment(text string, m []int, s, e int) bool {
	word := strings.ToLower(text[m[2]:m[3]])
	key := assignedKey(text, m[2], m[3])
	if st := m[3] - len(key); st > 0 && (text[st-1] == '/' || text[st-1] == '\\') {
		return false // /etc/passwd: a path, not a key
	}
	nk := normKey(key)
	if word == "key" && !hasAnySuffix(nk, secretKeySuffixes) {
		return false // key=, monkey=, sort_key=
	}
	kind := keyKind(word, key)
	v := text[s:e]
	bare := m[12] >= 0
	if placeholder(v) || notSecretWords[strings.ToLower(v)] || v[0] == '=' || v[0] == ':' {
		return false
	}
	if normKey(v) == nk || normKey(v) == word {
		return false // password="password": a field name
	}
	if word == "pwd" && strings.ContainsAny(v[:1], "/~.") {
		return false // PWD=/work/dir in an environment dump
	}
	if kind == KindToken && !tokenLike(v) {
		return false // "token": "Hello" (logprobs), max_token=512
	}
	if kind != KindPassword && strings.ContainsAny(v, " \t") {
		return false // keys and tokens have no spaces
	}
	if kind == KindPassword && strings.Count(v, " ") >= 3 {
		return false // a sentence, not a password
	}
	if !bare {
		return true
	}
	if identifierLike(v) {
		return false
	}
	// After a colon, or an '=' with spaces around it, an unquoted value followed by more
	// words on its line is prose unless it looks like a secret.
	sep := text[m[6]:m[7]]
	if strings.Contains(sep, ":") && !strings.Contains(sep, "=") || strings.Contains(sep, " ") {
		if rest := restOfLine(text, e); rest != "" && !secretish(v) {
			return false
		}
	}
	return true
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// restOfLine returns what follows position i on its line, without spaces and closing
// punctuation.
func restOfLine(text string, i int) string {
	rest := text[i:]
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	return strings.Trim(rest, " \t\r,;.)]}\"'\\")
}

// placeholder reports values that stand for a secret without being one: references to
// variables (${X}, $X, {{ x }}, %X%), <your-key>, masks (****, xxxx, ...) and markers.
func placeholder(v string) bool {
	if v == "" {
		return true
	}
	switch v[0] {
	case '$', '<', '{', '[', '%', '(':
		return true
	}
	if strings.HasPrefix(v, "#{") || strings.Contains(v, markerPrefix) {
		return true
	}
	return strings.Trim(v, "*xX•.…_-") == ""
}

// identifierLike reports unquoted values that are code rather than a literal secret: a
// call or index expression, a dotted attribute chain (self.password, os.environ), or a
// variable named after the secret (user_password, new_token).
func identifierLike(v string) bool {
	if strings.ContainsAny(v, "([") {
		return true
	}
	if dottedIdent.MatchString(v) {
		return true
	}
	if lowerIdent.MatchString(v) {
		lv := strings.ToLower(v)
		for _, w := range []string{"pass", "pwd", "token", "secret", "key"} {
			if strings.Contains(lv, w) {
				return true
			}
		}
	}
	return false
}

var (
	dottedIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$`)
	lowerIdent  = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// tokenLike reports a value long and random enough to be a token rather than a word or a
// count.
func tokenLike(v string) bool {
	if utf8.RuneCountInString(v) < 8 || strings.ContainsAny(v, " \t") {
		return false
	}
	c := classify(v)
	if c.digit == len(v) {
		return false
	}
	return c.digit > 0 || (c.upper > 0 && c.lower > 0)
}

// secretish reports a value that does not read as an ordinary word: it has a digit, a
// symbol, or a capital letter after its first character.
func secretish(v string) bool {
	for i, r := range v {
		switch {
		case r >= '0' && r <= '9':
			return true
		case r >= 'A' && r <= 'Z':
			if i > 0 {
				return true
			}
		case r >= 'a' && r <= 'z', r == '-', r == '_', r == '.', r == '\'':
		default:
			return true
		}
	}
	return false
}

// looksRandom reports a key body with digits and both cases, as generated keys have and
// hyphenated words ("sk-learn-compatible-wrapper") do not.
func looksRandom(body string) bool {
	c := classify(body)
	return c.digit > 0 && c.upper > 0 && c.lower > 0
}

type classes struct{ digit, upper, lower int }

func classify(s string) classes {
	var c classes
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b >= '0' && b <= '9':
			c.digit++
		case b >= 'A' && b <= 'Z':
			c.upper++
		case b >= 'a' && b <= 'z':
			c.lower++
		}
	}
	return c
}

func isTokenByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b == '_' || b == '-'
}
