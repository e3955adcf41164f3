package redact

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestReplyToSecretRequest(t *testing.T) {
	r, _ := New(nil)
	cases := []struct {
		name, ask, reply string
		redacted         bool
	}{
		{"password", "Please type your password.", "Xy8#pQ3rT6vW", true},
		{"pin", "What is your PIN?", " 4821\n", true},
		{"token quoted", "Paste the deploy token here:", "`tk9Lm2Qx7Vb4`", true},
		{"api key", "I need your API key to continue.", "abcd1234efgh5678", true},
		{"one-time code", "Enter the one-time code we sent you.", "739204", true},
		{"yes after a password request", "Shall I reset your password?", "yes", false},
		{"ok after a key request", "Do you have the SSH key at hand?", "OK.", false},
		{"booking id", "What is your reservation id?", "BK-2026-118734", false},
		{"order number", "Which order should I look up?", "ORD-88231", false},
		{"sentence reply", "Please type your password.", "I would rather not type it here", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			turns := []Turn{{Role: "assistant", Texts: []string{c.ask}}, {Role: "user", Texts: []string{c.reply}}}
			out, _ := r.RedactConversation(turns)
			got := out[1].Texts[0]
			v := strings.Trim(c.reply, " \n`")
			if c.redacted {
				if strings.Contains(got, v) || !strings.Contains(got, Marker(KindReply)) {
					t.Fatalf("reply %q to %q: sent as %q", c.reply, c.ask, got)
				}
			} else if got != c.reply {
				t.Fatalf("reply %q to %q became %q", c.reply, c.ask, got)
			}
			if turns[1].Texts[0] != c.reply {
				t.Fatal("the input turns were changed")
			}
		})
	}
	// The same value with no request before it, or after the user's own message, is kept.
	for _, prev := range []Turn{{Role: "assistant", Texts: []string{"Done. Anything else?"}}, {Role: "user", Texts: []string{"my password?"}}} {
		out, _ := r.RedactConversation([]Turn{prev, {Role: "user", Texts: []string{"Xy8pQ3rT6vW"}}})
		if out[1].Texts[0] != "Xy8pQ3rT6vW" {
			t.Errorf("after %q the reply became %q", prev.Texts[0], out[1].Texts[0])
		}
	}
}

func TestSplitSecret(t *testing.T) {
	r, _ := New(nil)
	const tok = "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12xy"
	cases := []struct {
		name  string
		turns []Turn
	}{
		{"across messages", []Turn{
			{Role: "user", Texts: []string{"here is the token: " + tok[:17]}},
			{Role: "user", Texts: []string{tok[17:] + " thanks"}}}},
		{"across content parts", []Turn{
			{Role: "user", Texts: []string{"token " + tok[:9], tok[9:]}}}},
		{"openai key across messages, newline between", []Turn{
			{Role: "assistant", Texts: []string{"use sk-proj-Qx7Lm2Vb9Tz4Rk8\n"}},
			{Role: "user", Texts: []string{"Wc1Yd5Fh3Jn6Pg0Se2Ua7Ib4Oc9 ok"}}}},
		{"across lines of one text", []Turn{
			{Role: "user", Texts: []string{"token " + tok[:9] + "\n" + tok[9:] + "\nbye"}}}},
		{"aws key across parts", []Turn{
			{Role: "tool", Texts: []string{"AKIA2OGY", "BAH6ZQ3XK4PM"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var all, secret strings.Builder
			for _, tn := range c.turns {
				for _, x := range tn.Texts {
					all.WriteString(x)
				}
			}
			out, n := r.RedactConversation(c.turns)
			if n == 0 {
				t.Fatal("nothing redacted")
			}
			var got []string
			for _, tn := range out {
				got = append(got, tn.Texts...)
			}
			// No piece of 6 bytes of the token's body is left in any text.
			_ = secret
			joined := strings.Join(got, "|")
			for _, w := range strings.Fields(all.String()) {
				if len(w) < 20 {
					continue
				}
				for i := 0; i+6 <= len(w); i++ {
					if strings.Contains(joined, w[i:i+6]) && !strings.Contains(Marker("x"), w[i:i+6]) {
						t.Fatalf("%q still holds %q", joined, w[i:i+6])
					}
				}
			}
			if strings.Count(joined, "[REDACTED:") < 2 {
				t.Fatalf("both halves should be markers: %q", joined)
			}
		})
	}
	keep := []struct {
		name  string
		turns []Turn
	}{
		// A whole token followed by a word: the next text is not part of it.
		{"whole token then a word", []Turn{{Role: "user", Texts: []string{"use " + tok}}, {Role: "user", Texts: []string{"Thanks"}}}},
		// A label at the end of a text is not joined to the next.
		{"label then a word", []Turn{{Role: "user", Texts: []string{"password="}}, {Role: "user", Texts: []string{"ForgotIt123"}}}},
		{"ordinary words", []Turn{{Role: "user", Texts: []string{"see the file ask-"}}, {Role: "user", Texts: []string{"proj-notes.md"}}}},
		{"digest across parts", []Turn{{Role: "tool", Texts: []string{"sha256:9f86d081884c7d65", "9a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}}},
	}
	for _, c := range keep {
		t.Run(c.name, func(t *testing.T) {
			out, _ := Context(c.turns)
			for i := range out {
				for j := range out[i].Texts {
					if out[i].Texts[j] != c.turns[i].Texts[j] {
						t.Fatalf("%q became %q", c.turns[i].Texts[j], out[i].Texts[j])
					}
				}
			}
		})
	}
}

// TestMayAsk: the filter in front of askRE lets through every text askRE matches: each of
// its words in any case and inside other text, in texts with non-ASCII characters (a case
// fold of the Kelvin sign or the long s), and random texts of its letters.
func TestMayAsk(t *testing.T) {
	texts := []string{
		"What is your PASSWORD?", "pin code please", "Enter the OTP", "one-time code", "the 2FA code", "MFA code",
		"your API key", "Api_Key", "secret", "Tokens", "ssh-key", "Passphrase", "\u212Aey", "ſecret", "tell me the \u212Aey",
		"message 12 about order W000012 and flight HAT012", "", "no request here",
	}
	rng := rand.New(rand.NewPCG(5, 6))
	parts := []string{"pass", "word", "phrase", "code", "s", "pin", " number", "otp", "one", "time", "2fa", "auth", "token",
		"secret", "api", "ssh", "your", "k", "ey", "\u212Aey", "\u017Fecret", " ", "-", "_", "x", "é", "?"}
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(6) {
			p := parts[rng.IntN(len(parts))]
			if rng.IntN(3) == 0 {
				p = strings.ToUpper(p)
			}
			b.WriteString(p)
		}
		texts = append(texts, b.String())
	}
	matched := 0
	for _, s := range texts {
		if askRE.MatchString(s) {
			matched++
			if !mayAsk(s) {
				t.Fatalf("askRE matches %q, which mayAsk turns away", s)
			}
		}
	}
	if mayAsk("message 12 about order W000012 and flight HAT012") {
		t.Error("mayAsk lets through a text with none of the words")
	}
	if matched < 100 {
		t.Fatalf("only %d texts matched: the test proves little", matched)
	}
}

// TestHasSplitPrefix: a prefix counts at a word start only, and a later occurrence at a word
// start counts when an earlier one is glued to a word.
func TestHasSplitPrefix(t *testing.T) {
	for _, c := range []struct {
		tail string
		want bool
	}{
		{"ghp_abc", true},
		{"xghp_abc", false},
		{"xghp_abc.ghp_def", true},
		{"token=glpat-x", true},
		{"key_sk-abc", true},
		{"message", false},
		{"", false},
	} {
		if got := hasSplitPrefix(c.tail); got != c.want {
			t.Errorf("hasSplitPrefix(%q) = %v, want %v", c.tail, got, c.want)
		}
	}
}

// BenchmarkContextShort reads a conversation of 1,000 short messages, none asking for a secret.
func BenchmarkContextShort(b *testing.B) {
	turns := make([]Turn, 1000)
	for i := range turns {
		turns[i] = Turn{Role: []string{"user", "assistant"}[i%2], Texts: []string{fmt.Sprintf("message %d about order W%06d and flight HAT%03d", i, i, i%300)}}
	}
	for b.Loop() {
		Context(turns)
	}
}
