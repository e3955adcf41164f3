package redact

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// evasionCase is a secret written so that the patterns, reading the bytes as they are, miss
// it. secret is the value as the patterns would see it once the evasion is undone; no piece
// of it may be left, and keep must survive byte for byte.
type evasionCase struct {
	name, text, secret string
	keep               []string
}

var evasionCases = []evasionCase{
	{"json escape in the key", `{"user":"root","\u0070assword":"Xy8#pQ3rT6vW"}`, "Xy8#pQ3rT6vW", []string{`{"user":"root","\u0070assword":"`, `"}`}},
	{"json escapes in the value", `{"password":"Xy8\u0023pQ3rT6vW"}`, "Xy8#pQ3rT6vW", []string{`{"password":"`, `"}`}},
	{"surrogate pair in the key", `{"\ud835\udc29assword":"a7f3c9e1b5d2084f6e1a9c3b7d5f2e80"}`, "a7f3c9e1b5d2084f6e1a9c3b7d5f2e80", nil},
	{"hex escape", `cfg = "\x70assword=Gh5!Lk8Zq2Wv"`, "Gh5!Lk8Zq2Wv", []string{`cfg = "`}},
	{"zero-width space in a key", "key: sk-proj-Qx7Lm2Vb9Tz4\u200bRk8Wc1Yd5Fh3Jn6Pg0Se2Ua7Ib4Oc9 done", "sk-proj-Qx7Lm2Vb9Tz4Rk8Wc1Yd5Fh3Jn6Pg0Se2Ua7Ib4Oc9", []string{"key: ", " done"}},
	{"zero-width joiner in a prefix", "use gh\u200dp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12xy now", "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12xy", []string{"use ", " now"}},
	{"soft hyphen in a label", "pass\u00adword=Tb6%Wr2Qx9Lm", "Tb6%Wr2Qx9Lm", nil},
	{"byte order mark in a key", "AKIA\ufeff2OGYBAH6ZQ3XK4PM is the id", "AKIA2OGYBAH6ZQ3XK4PM", []string{" is the id"}},
	{"bidi controls around a key", "token \u202eglpat-Xy7Zq2Wv9Ut4Sr8Pq1No\u202c here", "glpat-Xy7Zq2Wv9Ut4Sr8Pq1No", []string{"token ", " here"}},
	{"numeric entity in a label", "p&#97;ssword=Vq3#Lm8Zt2Wx", "Vq3#Lm8Zt2Wx", nil},
	{"hex entity in a label", "&#x70;assword: Vq3#Lm8Zt2Wx", "Vq3#Lm8Zt2Wx", nil},
	{"named entities around a value", `password=&quot;Vq3#Lm8Zt2Wx&quot;`, "Vq3#Lm8Zt2Wx", nil},
	{"cyrillic letters in a label", "раssword: Hd7!Kp2Qz9Ry", "Hd7!Kp2Qz9Ry", nil},
	{"greek letters in a label", "api_kεy = Hd7Kp2Qz9RyWx4Nb", "Hd7Kp2Qz9RyWx4Nb", nil},
	{"full-width label", "ｐａｓｓｗｏｒｄ＝Nf4$Tb8Wq1Zs", "Nf4$Tb8Wq1Zs", nil},
	{"full-width key", "ｓｋ-ant-api03-Zk4Pq8Wm2Xr6Tn1Yb5Vc9Hd3Jf7Lg0Ks4Ma8Qe2Ru6", "sk-ant-api03-Zk4Pq8Wm2Xr6Tn1Yb5Vc9Hd3Jf7Lg0Ks4Ma8Qe2Ru6", nil},
	{"percent-encoded query pair", "https://app.example.com/login?next=%2Fhome&password%3DJr5%25Yc2Mv7Xk", "Jr5%Yc2Mv7Xk", []string{"https://app.example.com/login?next=%2Fhome&password%3D"}},
	{"non-breaking space inside a key name", "api\u00a0key: sk-Wm4Xp8", "sk-Wm4Xp8", []string{"api\u00a0key: "}},
	{"non-breaking space between the words of a label", "access\u00a0token: \"Hd7!Kp2Qz9Ry\"", "Hd7!Kp2Qz9Ry", []string{"access\u00a0token: \""}},
	{"narrow no-break space inside a key name", "API\u202fKEY=Tq3Wv8Nb", "Tq3Wv8Nb", nil},
	{"thin space after the label", "api_key:\u2009Qx7Lm2Vb9Tz4Rk8Wc1Yd5", "Qx7Lm2Vb9Tz4Rk8Wc1Yd5", []string{"api_key:"}},
	{"en space and medium space in a label", "access\u2002token\u205f= Zr5Kx2Wm9Lp4", "Zr5Kx2Wm9Lp4", nil},
	{"ogham space mark before the value", "password:\u1680Vb7!Qm3Tz8", "Vb7!Qm3Tz8", nil},
	{"non-breaking and zero-width space inside a key name", "api\u00a0\u200bkey = Np6Yq2Rz8Wc", "Np6Yq2Rz8Wc", nil},
	{"percent-encoded aws secret", "aws_secret_access_key=wJa1rXUtnFEMI%2FK7MDENG%2FbPxRfiCYzQ8Kd93hQa", "wJa1rXUtnFEMI/K7MDENG/bPxRfiCYzQ8Kd93hQa", []string{"aws_secret_access_key="}},
}

func TestEvasions(t *testing.T) {
	r, _ := New(nil)
	for _, c := range evasionCases {
		t.Run(c.name, func(t *testing.T) {
			out, n := r.Redact(c.text)
			if n == 0 {
				t.Fatalf("nothing redacted in %q", c.text)
			}
			assertNoPiece(t, out, c.secret, "")
			for _, k := range c.keep {
				if !strings.Contains(out, k) {
					t.Errorf("%q lost %q", out, k)
				}
			}
			if again, _ := r.Redact(out); again != out {
				t.Errorf("not idempotent: %q -> %q", out, again)
			}
		})
	}
}

// assertNoPiece fails when out, read as the patterns read it, still holds six consecutive
// bytes of secret that the text outside it does not hold.
func assertNoPiece(t *testing.T, out, secret, outside string) {
	t.Helper()
	seen := out
	for range 3 {
		if n, ok := normalize(seen); ok {
			seen = n.text
		}
	}
	seen = markerRE.ReplaceAllString(seen, "") // a kind may share letters with a secret's prefix
	for i := 0; i+6 <= len(secret); i++ {
		if strings.Contains(seen, secret[i:i+6]) && !strings.Contains(outside, secret[i:i+6]) {
			t.Fatalf("%q still holds %q of the secret", out, secret[i:i+6])
		}
	}
}

// evade rewrites the character of text at byte i (moved to the next ASCII character) with
// one of the evasions normalize undoes. The text a pattern reads after normalize is the
// same, so a secret redacted in text is redacted in the result too.
func evade(text string, i int, how uint8) string {
	// Quotes and backslashes are the text's structure, not a place to hide a secret in.
	for i < len(text) && (text[i] >= 0x80 || strings.IndexByte(`"'\\`, text[i]) >= 0 || i > 0 && text[i-1] == '\\') {
		i++
	}
	if i >= len(text) {
		return text
	}
	c := text[i]
	var rep string
	switch how % 7 {
	case 0:
		rep = "\u200b" + string(c) // a zero-width space before it
	case 1:
		rep = fmt.Sprintf(`\u%04x`, c)
	case 2:
		rep = fmt.Sprintf("&#%d;", c)
	case 3:
		rep = fmt.Sprintf("%%%02X", c)
	case 4:
		rep = string(c) + "\u00ad" // a soft hyphen after it
	case 5:
		if c > ' ' && c < 0x7f {
			rep = string(rune(c) - '!' + 0xFF01) // its full-width form
		} else {
			rep = string(c)
		}
	default:
		rep = string(c)
		for cyr, lat := range confusables {
			if byte(lat) == c && cyr < 0x500 {
				rep = string(cyr)
				break
			}
		}
	}
	return text[:i] + rep + text[i+1:]
}

// FuzzEvasions plants each secret of the test tables, rewrites up to three of its
// characters (or of the label before it) with an evasion, and checks that no piece of the
// secret is left, read as the patterns read it. The top three bits of h1 choose instead,
// one time in two, an evasion of the whole secret: base64 or hex of it, a token of a known
// prefix split over two messages or two content parts at p2, or the secret typed alone in
// reply to a request for a password.
func FuzzEvasions(f *testing.F) {
	cases := slices.Concat(secretCases, plantedCases)
	for i := range cases {
		f.Add(uint16(i), uint16(i*7), uint8(i), uint16(i*13), uint8(i+3), uint16(0), uint8(0))
		for w := range uint8(4) {
			f.Add(uint16(i), uint16(i*7), (4+w)<<5|uint8(i%32), uint16(i*13), uint8(i+3), uint16(0), uint8(0))
		}
	}
	r, err := New(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ci, p1 uint16, h1 uint8, p2 uint16, h2 uint8, p3 uint16, h3 uint8) {
		c := cases[int(ci)%len(cases)]
		at := strings.Index(c.text, c.secret)
		if at < 0 || len(c.secret) < 8 {
			return
		}
		if h1>>5 >= 4 {
			wholeEvasion(t, r, c, h1>>5, p2)
			return
		}
		// Evade inside the secret, or in the 12 bytes of label before it; later
		// rewrites first, so that the earlier offsets hold.
		lo := max(0, at-12)
		span := at + len(c.secret) - lo
		pos := []int{lo + int(p1)%span, lo + int(p2)%span, lo + int(p3)%span}
		how := []uint8{h1, h2, h3}
		slices.SortFunc(pos, func(a, b int) int { return b - a })
		text := c.text
		for k, p := range slices.Compact(pos) {
			text = evade(text, p, how[k])
		}
		out, _ := r.Redact(text)
		assertNoPiece(t, out, c.secret, strings.Replace(c.text, c.secret, " ", 1))
		if again, _ := r.Redact(out); again != out {
			t.Fatalf("not idempotent: %q -> %q", out, again)
		}
	})
}

// wholeEvasion plants c's secret evaded whole (see FuzzEvasions) and checks no piece of it
// is left.
func wholeEvasion(t *testing.T, r *Redactor, c secretCase, how uint8, p uint16) {
	at := strings.Index(c.text, c.secret)
	outside := strings.Replace(c.text, c.secret, " ", 1)
	// Only a secret of a known shape, one the rules take with no label, is found once
	// encoded or split; a reply is any secret without spaces.
	if alone, _ := r.Redact(c.secret); how < 8 && how != 6 && how != 7 && keepsPiece(alone, c.secret) {
		return
	}
	var got []string
	switch how {
	case 4, 5: // base64 or hex of the secret, in its place
		e := base64.StdEncoding.EncodeToString([]byte(c.secret))
		if how == 5 {
			e = hex.EncodeToString([]byte(c.secret))
		}
		out, _ := r.Redact(c.text[:at] + e + c.text[at+len(c.secret):])
		if strings.Contains(out, e) {
			t.Fatalf("the encoded secret %q was kept: %q", e, out)
		}
		got = []string{out}
	case 6, 7: // split over two messages (6) or two content parts of one message (7)
		pre := ""
		for _, x := range splitPrefixes()[c.secret[0]] {
			if strings.HasPrefix(c.secret, x) && len(x) > len(pre) {
				pre = x
			}
		}
		if alone, _ := r.Redact(c.secret); pre == "" || len(c.secret)-len(pre) < 2 || keepsPiece(alone, c.secret) {
			// No known prefix: the secret typed alone in reply to a request.
			if strings.ContainsAny(c.secret, " \t\n") {
				return
			}
			turns, _ := r.RedactConversation([]Turn{{Role: "assistant", Texts: []string{"Please type your password."}}, {Role: "user", Texts: []string{c.secret}}})
			got, outside = turns[1].Texts, ""
			break
		}
		cut := at + len(pre) + 1 + int(p)%(len(c.secret)-len(pre)-1)
		a, b := c.text[:cut], c.text[cut:]
		turns := []Turn{{Role: "user", Texts: []string{a}}, {Role: "user", Texts: []string{b}}}
		if how == 7 {
			turns = []Turn{{Role: "user", Texts: []string{a, b}}}
		}
		out, _ := r.RedactConversation(turns)
		for _, tn := range out {
			got = append(got, tn.Texts...)
		}
	}
	for _, out := range got {
		assertNoPiece(t, out, c.secret, outside)
	}
}

// keepsPiece reports whether out still holds six consecutive bytes of secret.
func keepsPiece(out, secret string) bool {
	out = markerRE.ReplaceAllString(out, "")
	for i := 0; i+6 <= len(secret); i++ {
		if strings.Contains(out, secret[i:i+6]) {
			return true
		}
	}
	return false
}

// TestBenignCorpus: of the values in testdata/benign.txt (ids, digests, paths, URLs, dates
// from recorded agent runs and public documentation), at least 99% are kept byte for byte,
// alone and in a sentence.
func TestBenignCorpus(t *testing.T) {
	r, _ := New(nil)
	data, err := os.ReadFile("testdata/benign.txt")
	if err != nil {
		t.Fatal(err)
	}
	total, kept := 0, 0
	for line := range strings.Lines(string(data)) {
		v := strings.TrimRight(line, "\n")
		if v == "" || strings.HasPrefix(v, "#") {
			continue
		}
		total++
		alone, _ := r.Redact(v)
		sentence := "The agent noted " + v + " in its report."
		inSentence, _ := r.Redact(sentence)
		if alone != v || inSentence != sentence {
			t.Logf("changed: %q -> %q / %q", v, alone, inSentence)
			continue
		}
		kept++
	}
	if total < 200 {
		t.Fatalf("the corpus holds %d values, fewer than 200", total)
	}
	t.Logf("benign corpus: %d of %d kept byte for byte (%.1f%%)", kept, total, 100*float64(kept)/float64(total))
	if float64(kept) < 0.99*float64(total) {
		t.Errorf("%d of %d benign values kept, under 99%%", kept, total)
	}
}
