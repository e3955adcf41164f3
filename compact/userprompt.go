package compact

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/memcascade/memcascade/transcript"
)

// A prompt of one's own (Settings.Prompt, the config's compaction.prompt_file) replaces the
// built-in summarization instructions. The rule:
//
//   - It must hold the line {{transcript}}, alone on its line, exactly once: it says where the
//     transcript goes. The text before it is the instructions (the system message); the text
//     after it, if any, follows the transcript in the request.
//   - The transcript itself is always rendered by the compactor between fenced tags that no
//     content can close, redacted, and framed as data, whatever the prompt says: a prompt
//     changes what the summary says, never what leaves the machine.
//   - Lines of the instructions that start with "## " are its section headings. A heading
//     that names one of the built-in sections (goal, decisions, work, open tasks or next step,
//     facts) replaces that section's heading, and the offline summarizer writes that section
//     under it; other headings are for the model only.
//
// The built-in prompt, in this form, is DefaultPrompt, shipped as
// testdata/prompts/default.txt (compact's tests check the file against it).

// PromptPlaceholder is the line of a prompt that says where the transcript goes.
const PromptPlaceholder = "{{transcript}}"

// maxPromptBytes bounds a prompt.
const maxPromptBytes = 32 << 10

// Prompt is a prompt parsed (see ParsePrompt).
type Prompt struct {
	// System is the instructions, the text before the placeholder line; After the text after
	// it ("": none). Both are trimmed.
	System, After string
	// Headings are the headings the instructions give the built-in sections, indexed by section
	// (transcript.SectionOf): "" keeps that section's built-in heading, nil keeps them all.
	Headings []string
}

// ValidatePrompt checks a prompt against the rule above; the error says what is wrong and on
// which line.
func ValidatePrompt(text string) error {
	_, err := ParsePrompt(text)
	return err
}

// ParsePrompt checks a prompt against the rule above (see ValidatePrompt) and splits it.
func ParsePrompt(text string) (Prompt, error) {
	switch {
	case !utf8.ValidString(text):
		return Prompt{}, errors.New("not valid UTF-8")
	case len(text) > maxPromptBytes:
		return Prompt{}, fmt.Errorf("%d bytes, more than the %d a prompt may have", len(text), maxPromptBytes)
	}
	lines := strings.Split(text, "\n")
	at := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == PromptPlaceholder {
			if at >= 0 {
				return Prompt{}, fmt.Errorf("line %d: a second %s line (line %d has one): the transcript goes in one place", i+1, PromptPlaceholder, at+1)
			}
			at = i
		} else if strings.Contains(l, PromptPlaceholder) {
			return Prompt{}, fmt.Errorf("line %d: %s must be alone on its line", i+1, PromptPlaceholder)
		}
	}
	if at < 0 {
		return Prompt{}, fmt.Errorf("no line %s: the prompt must say where the transcript goes", PromptPlaceholder)
	}
	p := Prompt{
		System: strings.TrimSpace(strings.Join(lines[:at], "\n")),
		After:  strings.TrimSpace(strings.Join(lines[at+1:], "\n")),
	}
	if p.System == "" {
		return Prompt{}, fmt.Errorf("line %d: no instructions before %s", at+1, PromptPlaceholder)
	}
	p.Headings = promptHeadings(lines[:at])
	return p, nil
}

// promptHeadings returns the headings the instructions declare, by built-in section.
func promptHeadings(lines []string) []string {
	var out []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "## ") {
			continue
		}
		if sec := transcript.SectionOf(l); sec >= 0 {
			if out == nil {
				out = make([]string, transcript.NumSections)
			}
			if out[sec] == "" {
				out[sec] = l
			}
		}
	}
	return out
}

// LoadPrompt reads a prompt file and checks it (see ValidatePrompt); the error names the file.
func LoadPrompt(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("prompt file %s: %w", path, err)
	}
	if err := ValidatePrompt(string(b)); err != nil {
		return "", fmt.Errorf("prompt file %s: %w", path, err)
	}
	return string(b), nil
}
