// Where the rules come from.
//
// The rules are ported by hand from the documented rules of public secret-scanner rule
// sets (gitleaks' default config, detect-secrets, trufflehog), not taken from gitleaks'
// Go module at run time. Measured with gitleaks v8.30.1 (its detect package with the
// embedded default config, 222 rules) linked into cmd/memctl:
//
//   - binary: 27,750,098 -> 36,242,158 bytes (+8.5 MB, +31%), go build -o of cmd/memctl;
//   - dependencies: go mod graph 416 -> 1,663 edges; packages linked into memctl
//     230 -> 399 (go list -deps);
//   - start-up: 37 ms to load and compile its rules;
//   - speed: 1.2 MB/s over the recorded conversations, against a few hundred MB/s here;
//   - coverage: it finds, but does not redact, and of the shapes this package must catch
//     it missed 8 of 11 (a JSON password with spaces, API_KEY=x.y.z, a Go MySQL DSN,
//     mysql -pPW, a Cookie header, hvs. and GOCSPX- tokens, a bare AWS secret key).
//
// So the formats are kept as data (formats.go) and the contexts as code (keyed.go,
// cli.go); Kinds lists the kinds they produce.
package redact

import (
	"regexp"
	"slices"
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
	KindDSNKey           = "dsn_key"
	KindPuTTYKey         = "putty_key"
)

// allKinds is every kind the built-in patterns can produce, in pattern order, each once.
var allKinds = uniq(slices.Concat([]string{
	KindPrivateKey, KindPuTTYKey, KindAnthropicKey, KindOpenAIKey, KindGitHubToken, KindGitLabToken,
	KindSlackWebhook, KindSlackToken, KindStripeKey, KindAWSAccessKey, KindGoogleAPIKey,
	KindHuggingFaceToken, KindSendGridKey, KindNPMToken, KindPyPIToken, KindTwilioKey,
}, formatKinds(), []string{
	KindJWT, KindBasicAuth, KindBearerToken, KindConnectionString, KindDSNKey,
	KindPassword, KindSecret, KindAPIKey, KindToken, KindCookie, KindSession, KindSignature,
	KindCredential, KindAWSSecretKey,
}))

func uniq(ks []string) []string {
	var out []string
	for _, k := range ks {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// kindIndex returns the index of kind in allKinds.
func kindIndex(kind string) int {
	i := slices.Index(allKinds, kind)
	if i < 0 {
		panic("redact: unknown kind " + kind)
	}
	return i
}

// anchored compiles a built-in expression to be tried at a candidate start.
func anchored(src string) *regexp.Regexp { return regexp.MustCompile(`^(?:` + src + `)`) }

// builtins run in this order: whole PEM blocks first, then token formats with a
// distinctive prefix (anthropic before openai, JWT before bearer), then contexts
// (headers, URLs, assignments). A later pattern never matches inside an earlier marker.
var builtins = slices.Concat(armorPatterns, tokenPatterns[:twilioEnd], formatPatterns(), tokenPatterns[twilioEnd:])

// armorPatterns match whole private key blocks.
var armorPatterns = []*pattern{
	{
		kind:    KindPrivateKey,
		re:      anchored(`-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z)`),
		anchors: []string{"-----BEGIN"},
		window:  -1,
	},
	{
		kind:    KindPrivateKey,
		re:      anchored(`---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----(?s:.*?)(?:---- END SSH2 ENCRYPTED PRIVATE KEY ----|\z)`),
		anchors: []string{"---- BEGIN SSH2"},
		window:  -1,
	},
	{
		// A PEM private key in base64 (kubeconfig client-key-data, a Kubernetes secret).
		kind:    KindPrivateKey,
		anchors: []string{b64PEMPrefix},
		match:   matchB64PEM,
	},
	{
		// A PEM body whose BEGIN line is elsewhere.
		kind:    KindPrivateKey,
		scanAll: pemTail,
	},
	{
		// A PuTTY .ppk file: from its first line to its MAC line.
		kind:    KindPuTTYKey,
		re:      anchored(`PuTTY-User-Key-File-\d+:(?s:.*?)(?:Private-(?:MAC|Hash):[ \t]*[0-9a-fA-F]+|\z)`),
		anchors: []string{"PuTTY-User-Key-File-"},
		window:  -1,
	},
}

// twilioEnd is where, in tokenPatterns, the formats of formats.go go: after the
// prefixed formats, before JWT and the contexts.
const twilioEnd = 14

// tokenPatterns are the prefixed token formats, then the contexts.
var tokenPatterns = []*pattern{
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
		// A JWT broken over lines; one on a single line is the next pattern's.
		kind:      KindJWT,
		anchors:   []string{"eyJ"},
		match:     matchSplitJWT,
		wordStart: true,
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
		// Basic <base64 of user:password> outside an Authorization header.
		kind:      KindBasicAuth,
		re:        anchored(`(?i)basic[ \t]+([A-Za-z0-9+/]{6,}={0,2})`),
		anchors:   []string{"basic"},
		fold:      true,
		wordStart: true,
		// "basic" in prose is followed by a word: the expression runs only before a
		// base64 run of six bytes or more.
		pre: func(text string, st int) bool {
			j := st + len("basic")
			for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
				j++
			}
			k := j
			for k < len(text) && k-j < 6 && (isB64(text[k])) {
				k++
			}
			return j > st+len("basic") && k-j == 6
		},
		groups: []int{1},
		valid: func(text string, _ []int, s, e int) bool {
			return (e-s)%4 == 0 && basicCreds(text[s:e]) && (e == len(text) || !isTokenByte(text[e]))
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
		// scheme%3A%2F%2Fuser%3Apassword%40host: a URL percent-encoded in a query.
		kind:    KindConnectionString,
		anchors: []string{"%3a%2f%2f"},
		fold:    true,
		match:   matchPctUserinfo,
		groups:  []int{1},
	},
	{
		// scheme://<32 hex>@host: a DSN whose user part is the key (Sentry and the like).
		kind:    KindDSNKey,
		re:      anchored(`[A-Za-z][A-Za-z0-9+.-]{0,19}://([0-9a-f]{32})(?::[0-9a-f]{32})?@`),
		anchors: []string{"://"},
		start:   schemeStart,
		groups:  []int{1},
	},
	{
		// user:password@tcp(host:3306)/db
		anchors: []string{"@tcp(", "@unix(", "@udp(", "@tcp6("},
		start:   tokenStartBefore,
		match:   matchGoDSN,
		groups:  []int{1},
		kindOf:  kindOfMatch,
	},
	keyedPattern(),
	{
		// --password X, --password=X, --db-password 'X', --api-key=X
		anchors: []string{"--"},
		match:   matchFlag,
		groups:  []int{1},
		kindOf:  kindOfMatch,
	},
	{
		// mysql -pPW, sshpass -p PW, redis-cli -a PW, ldapsearch -w PW, curl -u user:PW,
		// curl --user user:PW, smbclient -U user%PW, ... (cliCreds)
		anchors: cliCredAnchors(),
		match:   matchShortFlag,
		groups:  []int{1},
		kindOf:  kindOfMatch,
	},
	{
		// net use \\srv\share PW /user:name, net user name PW /add
		anchors: []string{"net use ", "net user "},
		fold:    true,
		match:   matchNetUse,
		groups:  []int{1},
		kindOf:  kindOfMatch,
	},
	{
		// htpasswd -b file user PW, htpasswd -nb user PW
		anchors: []string{"htpasswd"},
		match:   matchHtpasswd,
		groups:  []int{1},
		kindOf:  kindOfMatch,
	},
	{
		// CREATE USER u IDENTIFIED BY 'PW'
		kind:      KindPassword,
		anchors:   []string{"identified"},
		fold:      true,
		wordStart: true,
		match:     matchSQLIdentified,
		groups:    []int{1},
	},
	{
		kind:    KindPassword,
		re:      anchored(openSSLPass),
		anchors: []string{"-pass"},
		groups:  []int{1},
		valid: func(text string, _ []int, s, e int) bool {
			return !placeholder(text[s:e])
		},
	},
	{
		// base64 of user:password with no label.
		kind:    KindBasicAuth,
		scanAll: bareBasicCreds,
	},
	{
		// The newer Mailgun key format (32 hex-8 hex-8 hex) has no prefix: like the
		// public rule sets, it is taken only within 200 bytes after the word mailgun.
		kind:    "mailgun_key",
		anchors: []string{"mailgun"},
		fold:    true,
		match:   matchMailgun,
		groups:  []int{1},
	},
	{
		// A bare AWS secret access key with no label, last: every labelled form is
		// matched first.
		kind:    KindAWSSecretKey,
		scanAll: bareAWSSecret,
	},
}

// kindOfMatch reads the kind a match function stored in m[4].
func kindOfMatch(_ string, m []int) string { return allKinds[m[4]] }

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

// notSecretWords are values of secret-named keys that are types, keywords or prose.
var notSecretWords = map[string]bool{
	"null": true, "none": true, "nil": true, "true": true, "false": true, "undefined": true,
	"empty": true, "required": true, "optional": true, "str": true, "string": true,
	"int": true, "bytes": true, "bool": true, "any": true, "secretstr": true, "object": true,
	"redacted": true, "hidden": true, "masked": true, "n/a": true, "na": true, "tbd": true,
	"todo": true, "unset": true, "unknown": true, "default": true, "os.environ": true,
	"must": true, "should": true, "the": true, "your": true, "is": true, "are": true,
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

var mailgunKey = regexp.MustCompile(`(?:^|[^0-9A-Za-z_-])([0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})(?:$|[^0-9A-Za-z_-])`)

func matchMailgun(text string, st int) []int {
	m := mailgunKey.FindStringSubmatchIndex(text[st:min(len(text), st+200)])
	if m == nil {
		return nil
	}
	return []int{st, st + m[3], st + m[2], st + m[3]}
}
