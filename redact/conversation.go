package redact

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
)

// KindReply is the kind of a bare value typed in reply to a message that asks for a
// password, PIN, token or key.
const KindReply = "reply_secret"

// Turn is one message of a conversation as the redactor reads it: its role ("user",
// "assistant", "tool", ...) and its texts in order (the text parts of its content; one text
// for a string content).
type Turn struct {
	Role  string
	Texts []string
}

// RedactConversation returns the turns with every secret replaced: each text as Redact
// replaces it, and what only the sequence shows (see [Context]). The number of
// replacements is returned too.
func (r *Redactor) RedactConversation(turns []Turn) ([]Turn, int) {
	out, n := Context(turns)
	for i := range out {
		for j, t := range out[i].Texts {
			var k int
			out[i].Texts[j], k = r.Redact(t)
			n += k
		}
	}
	return out, n
}

// Context returns a copy of the turns with the secrets replaced that no text shows alone,
// and the number of replacements. The rest of each text is left as it is, for a redactor
// to read (the markers it puts are kept by every redactor of this package). Two things are
// replaced:
//
//   - A bare value (one word, no label) that is the whole of a user's message, when the
//     message before it, from another role, asks for a password, passphrase, PIN, one-time
//     code, token, secret or key: "Please type your password." then "Xy8#pQ3rT6vW". A short
//     ordinary answer (yes, no, ok, cancel, ...) is kept, and so is any value after a
//     question that names no secret (a booking id after "what is your reservation id?").
//   - A token of a known prefix cut in two by the end of a text: the last word of a text
//     (its trailing run of token characters, at most splitRun bytes) joined to the first
//     word of the next text (the next content part of the message, or the first of the next
//     message) is read again, and a secret of a prefixed rule that starts in the first and
//     ends in the second has both halves replaced. When the first is a secret alone (a
//     format of open length), the second must look like a token's body (8 bytes or more,
//     digits and letters) to be taken as its rest.
//     Only the built-in prefixed formats are tried (ghp_, sk-, AKIA, xoxb-, glpat-, ...),
//     whose prefix must be in the first half; a keyed value ("password=" at the end of one
//     text) is never joined to the next text.
func Context(turns []Turn) ([]Turn, int) {
	type ref struct{ i, j int } // text j of turn i
	spans := map[ref][]secret{} // few texts have one
	add := func(i, j int, s secret) { spans[ref{i, j}] = merge(spans[ref{i, j}], []secret{s}) }
	for i := 1; i < len(turns); i++ {
		if turns[i].Role != "user" || turns[i-1].Role == "user" || !askedForSecret(turns[i-1].Texts) {
			continue
		}
		if j, s, e, ok := bareReply(turns[i].Texts); ok {
			add(i, j, secret{s, e, KindReply})
		}
	}
	// Every pair of adjacent texts in the order they are read, and every line break inside
	// a text (a store may hold a message's parts joined by newlines).
	prev, texts := ref{-1, -1}, 0
	for i, t := range turns {
		texts += len(t.Texts)
		for j, text := range t.Texts {
			if prev.i >= 0 {
				a := turns[prev.i].Texts[prev.j]
				if as, ae, be, kind, ok := splitAt(a, text, true); ok {
					add(prev.i, prev.j, secret{as, ae, kind})
					add(i, j, secret{0, be, kind})
				}
			}
			for at := 0; ; {
				nl := strings.IndexByte(text[at:], '\n')
				if nl < 0 {
					break
				}
				nl += at
				if as, ae, be, kind, ok := splitAt(text[:nl], text[nl+1:], false); ok {
					add(i, j, secret{as, ae, kind})
					add(i, j, secret{nl + 1, nl + 1 + be, kind})
				}
				at = nl + 1
			}
			prev = ref{i, j}
		}
	}
	out := make([]Turn, len(turns))
	all := make([]string, 0, texts) // the texts of every turn, copied in one allocation
	n := 0
	for i, t := range turns {
		from := len(all)
		for j, text := range t.Texts {
			if ss := spans[ref{i, j}]; len(ss) > 0 {
				text = apply(text, ss)
				n += len(ss)
			}
			all = append(all, text)
		}
		out[i] = Turn{Role: t.Role, Texts: all[from:len(all):len(all)]}
	}
	return out, n
}

// splitRun bounds the bytes of a text's last word and of the next text's first word that
// the split check joins.
const splitRun = 256

// splitAt finds a prefixed token that starts at the end of a and ends at the start of b
// (see Context): a[as:ae] and b[:be] are its halves (b's leading spaces included).
//
// With lines set, a's last word may span lines (a JWT wrapped by a terminal, cut at the
// end of a message); the line breaks inside one text are checked without it.
func splitAt(a, b string, lines bool) (as, ae, be int, kind string, ok bool) {
	ae = len(strings.TrimRight(a, " \t\r\n"))
	as = ae
	for as > 0 && ae-as < splitRun && (isSplitByte(a[as-1]) || lines && (a[as-1] == '\n' || a[as-1] == '\r')) {
		as--
	}
	for as < ae && (a[as] == '\n' || a[as] == '\r') {
		as++
	}
	if ae-as < 3 {
		return
	}
	bs := len(b) - len(strings.TrimLeft(b, " \t\r\n"))
	if bs == len(b) || !isSplitByte(b[bs]) {
		return
	}
	// The rest may hold more than one word: a JWT's signature on the next line.
	tail, head := a[as:ae], b[bs:min(len(b), bs+splitRun)]
	if !hasSplitPrefix(tail) {
		return
	}
	r := splitRedactor()
	for _, s := range r.secrets(tail + head) {
		if s.s >= len(tail) || s.e <= len(tail) || !startsWithPrefix(tail[s.s:]) {
			continue
		}
		// The first half is a secret alone already (a format of open length): the next
		// text continues it only when it looks like a token's body, not a word.
		for _, t := range r.secrets(tail) {
			if t.e > s.s && !randomish(head[:s.e-len(tail)]) {
				return
			}
		}
		return as + s.s, ae, bs + s.e - len(tail), s.kind, true
	}
	return
}

// splitRedactor runs the built-in prefixed formats only: what a split check accepts.
var splitRedactor = sync.OnceValue(func() *Redactor {
	return &Redactor{own: true}
})

// splitPrefixes are the literal prefixes of the built-in token formats (ghp_, sk-, AKIA,
// xoxb-, ...): a split check runs only on a last word holding one.
// splitPrefixes are the anchors of the built-in prefixed formats (case-sensitive, at a word
// start, three bytes or more), by their first byte.
var splitPrefixes = sync.OnceValue(func() *[256][]string {
	var out [256][]string
	for _, p := range builtins {
		if !p.wordStart || p.fold {
			continue
		}
		for _, a := range p.anchors {
			if len(a) >= 3 {
				out[a[0]] = append(out[a[0]], a)
			}
		}
	}
	return &out
})

func startsWithPrefix(s string) bool {
	if s == "" {
		return false
	}
	for _, p := range splitPrefixes()[s[0]] {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// hasSplitPrefix reports a prefix of splitPrefixes in tail at a word start (the start, or
// after a byte that is not a word byte, or after '_').
func hasSplitPrefix(tail string) bool {
	for i := range len(tail) {
		if (i == 0 || !isWordByte(tail[i-1]) || tail[i-1] == '_') && startsWithPrefix(tail[i:]) {
			return true
		}
	}
	return false
}

// randomish reports a run of at least 4 bytes that does not read as a word: it holds a
// digit, or an upper-case letter after its first byte and a lower-case one ("NUhJduRHH",
// not "Thanks" or "README").
func randomish(s string) bool {
	var digit, upper, lower bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		digit = digit || c >= '0' && c <= '9'
		upper = upper || i > 0 && c >= 'A' && c <= 'Z'
		lower = lower || c >= 'a' && c <= 'z'
	}
	return len(s) >= 4 && (digit || upper && lower)
}

// isSplitByte reports a byte a token may hold: letters, digits and - _ . + / = ~ $.
func isSplitByte(c byte) bool {
	return isWordByte(c) || strings.IndexByte("-.+/=~$", c) >= 0
}

// askRE finds a request for a secret in a message: the noun of one.
var askRE = regexp.MustCompile(`(?i)\b(?:pass(?:word|phrase|code)s?|pins?(?: code| number)?|otp|one[- ]time (?:code|password)|(?:2fa|mfa|totp|verification|security|auth(?:entication)?) code|tokens?|secrets?|(?:(?:your|the|api|secret|access|private|license|encryption|ssh|auth|signing)[ _-]?)keys?)\b`)

// askedForSecret reports whether the end of a message (its last 400 bytes) asks for a
// secret.
func askedForSecret(texts []string) bool {
	if len(texts) == 0 {
		return false
	}
	t := texts[len(texts)-1]
	if len(t) > 400 {
		t = t[len(t)-400:]
	}
	return mayAsk(t) && askRE.MatchString(t)
}

// askWords are what every match of askRE holds, lower-cased: an ASCII text with none of them
// asks for nothing, and is not given to the regexp (a backtracking match of its many
// alternatives was most of reading a long conversation).
var askWords = []string{"pass", "pin", "otp", "code", "token", "secret", "key"}

// mayAsk reports whether t may match askRE: false only for an ASCII t without any of
// askWords in any case. A text with other characters may match through a case fold of
// (?i) (the Kelvin sign for k, the long s for s): it is left to the regexp.
func mayAsk(t string) bool {
	var buf [400]byte
	low := buf[:0]
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c >= 0x80 {
			return true
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		low = append(low, c)
	}
	for _, w := range askWords {
		if bytes.Contains(low, []byte(w)) {
			return true
		}
	}
	return false
}

// ordinaryReplies are one-word answers that are no secret, whatever was asked.
var ordinaryReplies = map[string]bool{
	"yes": true, "no": true, "ok": true, "okay": true, "sure": true, "done": true, "cancel": true,
	"skip": true, "later": true, "thanks": true, "nope": true, "yeah": true, "yep": true,
	"none": true, "n/a": true, "stop": true, "quit": true, "exit": true, "help": true,
	"continue": true, "wait": true, "why": true, "what": true, "how": true, "retry": true,
	"sorry": true, "pass": true, "proceed": true, "abort": true, "ready": true, "here": true,
}

// bareReply finds the bare value of a message: its one text that is not blank, when that
// text is a bare value (see bareValue).
func bareReply(texts []string) (j, s, e int, ok bool) {
	j = -1
	for k, t := range texts {
		if strings.TrimSpace(t) == "" {
			continue
		}
		if j >= 0 {
			return 0, 0, 0, false
		}
		j = k
	}
	if j < 0 {
		return 0, 0, 0, false
	}
	s, e, ok = bareValue(texts[j])
	return j, s, e, ok
}

// bareValue returns the span of a text that is a bare value: the whole text but the spaces
// and quotes around it, one word of 4 to 256 bytes, not an ordinary reply nor a marker.
func bareValue(t string) (int, int, bool) {
	s := len(t) - len(strings.TrimLeft(t, " \t\r\n\"'`"))
	e := len(strings.TrimRight(t, " \t\r\n\"'`"))
	if e-s < 4 || e-s > 256 {
		return 0, 0, false
	}
	v := t[s:e]
	if strings.ContainsAny(v, " \t\r\n") || strings.Contains(v, markerPrefix) {
		return 0, 0, false
	}
	if ordinaryReplies[strings.ToLower(strings.TrimRight(v, ".!?"))] {
		return 0, 0, false
	}
	return s, e, true
}
