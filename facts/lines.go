package facts

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error lines are cut to this many characters.
const maxErrorLen = 120

// Constraints are cut to one sentence of at most this many characters.
const maxConstraintLen = 160

var (
	// Anchored: the line starts with the error. Read in every message.
	exceptionLineRE = regexp.MustCompile(`^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Fault|Failure)(?::\s*\S.*)?$`)
	errorPrefixRE   = regexp.MustCompile(`^(?:error|fatal|panic|ERROR|FATAL|PANIC|Error|Fatal|Panic|fatal error|FAILED|FAIL)(?:\[[\w-]+\])?(?::|!|\s+[-:]\s)\s*\S`)
	failedLineRE    = regexp.MustCompile(`^(?:FAILED|FAIL:?)\s+\S|^npm ERR!\s*\S`)
	compilerErrRE   = regexp.MustCompile(`^[\w./-]+\.\w+:\d+(?::\d+)?:\s*(?:error|fatal error|undefined|cannot|invalid|syntax error|expected)\b`) // on the lower-cased line
	// Unanchored: the phrase may sit anywhere in the line. Read in tool output only, on the
	// lower-cased line.
	errorPhraseRE    = regexp.MustCompile(`\b(?:exit(?:ed)?(?: with)? (?:code|status)[:= ]*[1-9]\d{0,2}|returned non-zero exit status [1-9]|http(?:/\d(?:\.\d)?)? [45]\d\d\b|[45]\d\d (?:not found|bad request|unauthorized|forbidden|internal server error|bad gateway|service unavailable|gateway timeout|too many requests|conflict|method not allowed|unprocessable entity|payment required|request timeout)|command not found|no such file or directory|permission denied|segmentation fault|core dumped|connection refused|timed out|out of memory|\d+ failed\b|failed (?:to|with|because)\b|build failed|tests? failed)`)
	errorPhraseWords = []string{"exit", "http", "not found", "bad request", "unauthorized", "forbidden", "server error",
		"bad gateway", "unavailable", "timeout", "too many", "conflict", "not allowed", "unprocessable", "payment required",
		"no such file", "permission denied", "segmentation", "core dumped", "refused", "timed out", "out of memory", "failed"}

	fenceRE    = regexp.MustCompile("(?s)```.*?(?:```|$)")
	listMarkRE = regexp.MustCompile(`^(?:[-*+•>]\s+|\d{1,3}[.)]\s+)+`)
)

// errors extracts error lines. Lines of a numbered file listing (1466:  raise ValueError)
// are code, not errors.
func (x *extractor) errors(s string, cx ctx) {
	phrases := cx.allErrors && containsAny(asciiLower(s), errorPhraseWords...)
	for line := range lines(s) {
		line = strings.TrimSpace(line)
		if line == "" || numberedLine(line) {
			continue
		}
		l := strings.TrimSpace(strings.TrimPrefix(line, "E "))
		if isErrorLine(l, phrases) {
			x.addError(l, cx.ref)
		}
	}
}

// isErrorLine checks the error patterns, each behind a cheap test of what it needs.
func isErrorLine(l string, phrases bool) bool {
	switch l[0] {
	case 'e', 'E', 'f', 'F', 'p', 'P':
		if errorPrefixRE.MatchString(l) {
			return true
		}
	}
	if (strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "npm ERR!")) && failedLineRE.MatchString(l) {
		return true
	}
	if containsAny(l, "Error", "Exception", "Exit", "Interrupt", "Fault", "Failure") && exceptionLineRE.MatchString(l) {
		return true
	}
	if !phrases && strings.IndexByte(l, ':') < 0 {
		return false
	}
	lower := asciiLower(l)
	if strings.IndexByte(l, ':') >= 0 && containsAny(lower, "error", "undefined", "cannot", "invalid", "expected") && compilerErrRE.MatchString(lower) {
		return true
	}
	return phrases && containsAny(lower, errorPhraseWords...) && errorPhraseRE.MatchString(lower)
}

// trimListMarks returns line without the list marks it starts with (listMarkRE), trimmed. The
// expression runs only on a line whose first byte can start a mark: most lines have none.
func trimListMarks(line string) string {
	if line == "" || strings.IndexByte("-*+>", line[0]) < 0 && !isDigit(line[0]) && !strings.HasPrefix(line, "•") {
		return line
	}
	return strings.TrimSpace(listMarkRE.ReplaceAllString(line, ""))
}

// constraints extracts the sentences of a user message that constrain the task.
func (x *extractor) constraints(s string) {
	if strings.Contains(s, "```") {
		s = fenceRE.ReplaceAllString(s, "\n")
	}
	for line := range lines(s) {
		line = trimListMarks(strings.TrimSpace(line))
		if line == "" || !hasConstraintWord(line) {
			continue
		}
		for _, sent := range sentences(line) {
			if !hasConstraintWord(sent) {
				continue
			}
			sent = strings.TrimRight(sent, ".! ")
			if utf8.RuneCountInString(sent) < 10 || len(strings.Fields(sent)) < 3 || injectionLike(sent) {
				continue
			}
			x.c.add(KindConstraint, cutWords(sent, maxConstraintLen), "", true)
		}
	}
}

// injectionMarkers are phrases of text that addresses the model rather than the task
// ("ignore previous instructions", "you are now in developer mode"). A sentence with one is
// not a constraint of the user's task: carried into a summary as a "constraint" it would
// give the injection the weight of a rule.
var injectionMarkers = []string{
	"ignore previous", "ignore all previous", "ignore the previous", "ignore your instructions",
	"ignore all instructions", "ignore the above", "ignore prior", "disregard previous",
	"disregard all", "disregard the above", "disregard your", "forget your instructions",
	"forget all previous", "you are now", "developer mode", "system prompt", "jailbreak",
	"new instructions", "override your", "act as", "pretend to be", "reveal your",
}

// injectionLike reports whether a sentence reads as a prompt injection.
func injectionLike(s string) bool {
	l := strings.Join(strings.Fields(asciiLower(s)), " ")
	for _, m := range injectionMarkers {
		if strings.Contains(l, m) {
			return true
		}
	}
	return false
}

// numberedLine reports a line of a numbered listing: "1466:    raise ValueError(msg)".
func numberedLine(line string) bool {
	i := 0
	for i < len(line) && isDigit(line[i]) {
		i++
	}
	return i > 0 && i < len(line) && line[i] == ':'
}

// constraintWords mark a constraint alone; constraintPhrases are word sequences that do.
var (
	constraintWords = set("must", "mustn't", "don't", "dont", "never", "always", "only", "without", "cannot",
		"can't", "should", "shouldn't", "ensure", "avoid", "unless", "prefer", "prefers", "preferred")
	constraintPhrases = [][]string{{"do", "not"}, {"does", "not"}, {"doesn't"}, {"must", "not"}, {"at", "least"},
		{"at", "most"}, {"no", "more", "than"}, {"no", "less", "than"}, {"need", "to"}, {"needs", "to"},
		{"can", "not"}, {"make", "sure"}, {"instead", "of"}, {"rather", "than"}, {"not", "allowed"},
		{"no", "later", "than"}}
)

// constraintEnds maps each constraint word, and the last word of each constraint phrase, to the
// words that must come before it (none for a word): one lookup a word of the text.
var constraintEnds = func() map[string][][]string {
	m := map[string][][]string{}
	for w := range constraintWords {
		m[w] = append(m[w], nil)
	}
	for _, ph := range constraintPhrases {
		if len(ph) > 3 {
			panic("facts: a constraint phrase of more than three words: hasConstraintWord keeps two words back")
		}
		last := ph[len(ph)-1]
		m[last] = append(m[last], ph[:len(ph)-1])
	}
	return m
}()

// hasConstraintWord reports whether s has one of the constraint words or phrases. Its words
// are the runs of ASCII letters and apostrophes (’ read as '), compared without case.
func hasConstraintWord(s string) bool {
	if strings.Contains(s, "’") {
		s = strings.ReplaceAll(s, "’", "'")
	}
	var buf [16]byte  // a word lower-cased; a longer word is none of them
	var w1, w2 string // the word before this one, and the one before that
	for i := 0; i < len(s); {
		if !isConstraintByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isConstraintByte(s[j]) {
			j++
		}
		cur := s[i:j]
		if len(cur) <= len(buf) {
			b := buf[:len(cur)]
			for k := range b {
				b[k] = lowerByte(cur[k])
			}
			for _, before := range constraintEnds[string(b)] {
				n := len(before)
				if (n < 1 || strings.EqualFold(w1, before[n-1])) && (n < 2 || strings.EqualFold(w2, before[n-2])) {
					return true
				}
			}
		}
		w2, w1 = w1, cur
		i = j
	}
	return false
}

func isConstraintByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '\'' }

var abbreviations = map[string]bool{
	"e.g": true, "i.e": true, "etc": true, "vs": true, "mr": true, "mrs": true, "ms": true,
	"dr": true, "st": true, "no": true, "approx": true, "incl": true, "cf": true, "fig": true,
}

// sentences splits a line at '.', '!' and '?' followed by a space, except after an
// abbreviation.
func sentences(line string) []string {
	var out []string
	start := 0
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		if i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
			continue
		}
		if c == '.' {
			w := line[start:i]
			if sp := strings.LastIndexFunc(w, unicode.IsSpace); sp >= 0 {
				w = w[sp+1:]
			}
			w = strings.TrimLeft(w, "(\"'")
			if abbreviations[strings.ToLower(w)] {
				continue
			}
		}
		if t := strings.TrimSpace(line[start : i+1]); t != "" {
			out = append(out, t)
		}
		start = i + 1
	}
	if t := strings.TrimSpace(line[start:]); t != "" {
		out = append(out, t)
	}
	return out
}
