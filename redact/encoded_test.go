package redact

import (
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// encodedSecrets are secrets of known shapes, and one labelled password, to be encoded.
var encodedSecrets = []string{
	"sk-proj-Qx7Lm2Vb9Tz4Rk8Wc1Yd5Fh3Jn6Pg0Se2Ua7Ib4Oc9",
	"ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12xy",
	"AKIA2OGYBAH6ZQ3XK4PM",
	"xoxb-2048137739-5188273390021-Zq8Lm3Vb7Tx2Rk6Wc9Yd4Fh1",
	"lin_api_Zq8Lm3Vb7Tx2Rk6Wc9Yd4Fh1Jn5Pg8Se3Ua0Ib2X", // a gitleaks rule (linear-api-key)
	"password=Xy8#pQ3rT6vW",
}

func TestEncodedSecrets(t *testing.T) {
	r, _ := New(nil)
	for _, sec := range encodedSecrets {
		for _, enc := range []struct {
			name string
			f    func(string) string
		}{
			{"base64", func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }},
			{"base64 unpadded", func(s string) string { return base64.RawStdEncoding.EncodeToString([]byte(s)) }},
			{"base64url", func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }},
			{"base64 of a line", func(s string) string { return base64.StdEncoding.EncodeToString([]byte("export CRED=" + s + "\n")) }},
			{"hex", func(s string) string { return hex.EncodeToString([]byte(s)) }},
			{"HEX", func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) }},
			{"base64 of hex", func(s string) string { return base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString([]byte(s)))) }},
			{"url-encoded", func(s string) string {
				var b strings.Builder
				for i := 0; i < len(s); i++ {
					b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{s[i]})))
				}
				return b.String()
			}},
			{"query escape", url.QueryEscape},
		} {
			t.Run(enc.name+" "+sec[:8], func(t *testing.T) {
				e := enc.f(sec)
				text := "value: " + e + " (from the config)"
				out, n := r.Redact(text)
				if n == 0 || strings.Contains(out, e) {
					t.Fatalf("%q: sent as %q", text, out)
				}
				if !strings.HasPrefix(enc.name, "url") && enc.name != "query escape" &&
					(!strings.HasPrefix(out, "value: [REDACTED:") || !strings.HasSuffix(out, "] (from the config)")) {
					t.Fatalf("the encoded run was not replaced whole: %q", out)
				}
				// Percent-encoding is undone before matching: a label stays, the value goes.
				_, value, _ := strings.Cut(sec, "=")
				if value == "" {
					value = sec
				}
				assertNoPiece(t, out, value, "")
			})
		}
	}
}

// Encoded text with no secret, and random bytes, are kept.
func TestEncodedBenign(t *testing.T) {
	r, _ := New(nil)
	for _, plain := range []string{"hello world, this is the build log", "apiVersion: v1\nkind: Secret\n", "the token expired; retry"} {
		for _, e := range []string{base64.StdEncoding.EncodeToString([]byte(plain)), hex.EncodeToString([]byte(plain))} {
			if out, _ := r.Redact("data " + e); out != "data "+e {
				t.Errorf("%q (%q) became %q", e, plain, out)
			}
		}
	}
}

// naiveEncodedRuns is what encodedRuns must find, looking at every byte.
func naiveEncodedRuns(text string) [][3]int {
	var out [][3]int
	for i := 0; i < len(text); {
		if !b64Run[text[i]] {
			i++
			continue
		}
		s := i
		for i < len(text) && b64Run[text[i]] {
			i++
		}
		for s < i && (text[s] == '/' || text[s] == '+' || text[s] == '-' || text[s] == '_') {
			s++
		}
		e := i
		for i < len(text) && text[i] == '=' && i-e < 2 {
			i++
		}
		if e-s >= minEncoded {
			out = append(out, [3]int{s, e, i})
		}
	}
	return out
}

// TestEncodedRuns compares the probing run finder with a byte-by-byte one, over the
// recorded conversations and texts of random runs of every length around minEncoded, with
// leading slashes and trailing padding.
func TestEncodedRuns(t *testing.T) {
	texts := testdataTexts(t)
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aZ09+/-_= .,\\n"
	for range 2000 {
		b := make([]byte, rng.IntN(120))
		for i := range b {
			if rng.IntN(8) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = "abcXYZ0189"[rng.IntN(10)]
			}
		}
		texts = append(texts, string(b))
	}
	for n := minEncoded - 2; n <= 3*minEncoded+2; n++ {
		run := strings.Repeat("Q", n)
		for pre := range 2*minEncoded + 1 {
			for _, lead := range []string{"", "//", "_-+"} {
				texts = append(texts, strings.Repeat(" ", pre)+lead+run+"==="+" x")
			}
		}
	}
	for _, text := range texts {
		var got [][3]int
		encodedRuns(text, func(s, e, end int) { got = append(got, [3]int{s, e, end}) })
		if want := naiveEncodedRuns(text); !slices.Equal(got, want) {
			t.Fatalf("in %.80q: found %v, want %v", text, got, want)
		}
	}
}
