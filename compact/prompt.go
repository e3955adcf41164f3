package compact

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/transcript"
)

// The summarization prompt: a system message (the instructions, the summary's headings filled
// in from package transcript) and a request template that frames the transcript as data.
var (
	//go:embed prompt/system.txt
	systemText   string
	systemPrompt = renderSystem(systemText)
	// compactPrompt is the same instructions in a fraction of the tokens, for small windows
	// (see compactWindow): there the full prompt would leave little room for the transcript.
	//go:embed prompt/system_compact.txt
	compactText   string
	compactPrompt = renderSystem(compactText)
	//go:embed prompt/request.txt
	requestText     string
	requestTemplate = template.Must(template.New("request").Parse(requestText))
	// requestHead and requestTail are requestTemplate before and after its one transcript
	// action (nil when it has not exactly one, at the top level): renderRequest writes the
	// transcript between them itself, where the template would print it through a buffer of
	// its own, a copy of the whole middle.
	requestHead, requestTail = splitRequest(requestText)
)

// transcriptAction is the action of the request template that writes the transcript.
const transcriptAction = "{{.Transcript}}"

// splitRequest parses text before and after its one transcriptAction as templates of their
// own; nil, nil when it has not exactly one or either side does not parse alone (the action
// lies within a block).
func splitRequest(text string) (head, tail *template.Template) {
	before, after, ok := strings.Cut(text, transcriptAction)
	if !ok || strings.Contains(after, transcriptAction) {
		return nil, nil
	}
	head, herr := template.New("request-head").Parse(before)
	tail, terr := template.New("request-tail").Parse(after)
	if herr != nil || terr != nil {
		return nil, nil
	}
	return head, tail
}

// renderSystem fills the section headings into the system prompt template.
func renderSystem(text string) string {
	var b bytes.Buffer
	err := template.Must(template.New("system").Option("missingkey=error").Parse(text)).Execute(&b, map[string]string{
		"Goal": transcript.Heading(transcript.SectionGoal), "Decisions": transcript.Heading(transcript.SectionDecisions),
		"Work": transcript.Heading(transcript.SectionWork), "Next": transcript.Heading(transcript.SectionNext),
		"Facts": transcript.Heading(transcript.SectionFacts),
	})
	if err != nil {
		panic(err) // the template is embedded and tested
	}
	return b.String()
}

// DefaultPrompt returns the built-in prompt in the form a prompt file takes.
func DefaultPrompt() string {
	return systemPrompt + "\n\n" + PromptPlaceholder + "\n"
}

// RenderRequest returns the chat messages that ask for a summary of transcriptText with the
// built-in prompt: the system prompt and the request. It is the default request, for tests and
// tools that show it; the compactor sends a prompt file's own prompt when the settings name
// one, and the short built-in prompt to a window under 8,192 tokens. chunk and chunks number
// the part (1 of 1 when not chunked); running is the summary of the parts before it.
//
// The transcript, the running summary and the summary to update are framed by tags that carry
// a code none of them contains, so no content can close its block early.
func RenderRequest(transcriptText, running string, chunk, chunks, maxTokens int) []llm.Message {
	return renderRequest(systemPrompt, transcriptText, running, "", chunk, chunks, maxTokens)
}

// RenderUpdateRequest is RenderRequest for a re-compaction's first (or only) part: previous,
// the summary the new one updates, is sent in a block of its own (summary_to_update) ahead
// of the transcript, with the instruction to update it section by section.
func RenderUpdateRequest(transcriptText, previous string, chunk, chunks, maxTokens int) []llm.Message {
	return renderRequest(systemPrompt, transcriptText, "", previous, chunk, chunks, maxTokens)
}

func renderRequest(system, transcriptText, running, previous string, chunk, chunks, maxTokens int) []llm.Message {
	var b strings.Builder // its String is the text written, not a copy of it
	b.Grow(len(transcriptText) + len(running) + len(previous) + len(requestText))
	fenced := []string{transcriptText, running}
	if previous != "" {
		fenced = append(fenced, previous) // a first compaction's code stays what it was
	}
	data := map[string]any{
		"Transcript": transcriptText, "Running": running, "Previous": previous, "Chunk": chunk, "Chunks": chunks,
		"Words": max(1, maxTokens*3/4), "Fence": fence(fenced...),
	}
	var err error
	if requestHead != nil {
		if err = requestHead.Execute(&b, data); err == nil {
			b.WriteString(transcriptText)
			err = requestTail.Execute(&b, data)
		}
	} else {
		err = requestTemplate.Execute(&b, data)
	}
	if err != nil {
		panic(err) // the template is embedded and tested: it cannot fail on these values
	}
	return []llm.Message{{Role: chat.RoleSystem, Content: system}, {Role: chat.RoleUser, Content: b.String()}}
}

// fence returns the code of the tags that frame data in a request: 8 hex digits derived from
// a hash of the data, so the same input gives the same request, and never a substring of any
// of data, so no content can forge a closing tag.
func fence(data ...string) string {
	h := sha256.New()
	var buf [4096]byte
	write := func(s string) { // through buf: a request's transcript is not copied whole
		for len(s) > 0 {
			n := copy(buf[:], s)
			h.Write(buf[:n])
			s = s[n:]
		}
	}
	for _, d := range data {
		write(strconv.Itoa(len(d)) + ":")
		write(d)
	}
	return fenceFrom([sha256.Size]byte(h.Sum(nil)), data)
}

// fenceFrom is the first of the codes derived from seed that no string of data contains.
func fenceFrom(seed [sha256.Size]byte, data []string) string {
	for i := uint64(0); ; i++ {
		if code := fenceCandidate(seed, i); !slices.ContainsFunc(data, func(d string) bool { return strings.Contains(d, code) }) {
			return code
		}
	}
}

// fenceCandidate is the i-th code derived from seed.
func fenceCandidate(seed [sha256.Size]byte, i uint64) string {
	sum := sha256.Sum256(binary.BigEndian.AppendUint64(seed[:], i))
	return hex.EncodeToString(sum[:4])
}
