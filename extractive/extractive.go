// Package extractive is the built-in offline summarizer: deterministic, no network. It reads
// the conversation of a summary request as messages (llm.Request.Previous, Running and
// Transcript), never the instructions rendered for a model, and writes the sections the
// summarization prompt asks a model for, under the same headings (package transcript). It
// implements llm.Completer, so a cascade can try it like any provider.
//
// It owns the offline summary's selection and layout. It imports llm, transcript and facts,
// and must not import memory, cascade, db or anything that sends requests or stores data.
package extractive

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/transcript"
)

// DefaultTokens is the summary budget of a Summarizer when a request sets no MaxTokens.
const DefaultTokens = 1024

// Summarizer writes, within a request's TargetTokens (else MaxTokens), the sections a model is
// asked for: the goal and the user's constraints, the decisions, the work done (each tool call
// with its result or error), the last state, and the key facts of the fact ledger (package
// facts). See summarizeTranscript for what is dropped first when the budget is short.
//
// It reads only Request.Previous, Request.Running and Request.Transcript. A request without
// them (not about a conversation) is summarized as plain text, the text of its user messages,
// by keeping its first and last lines; system and developer messages, the instructions, are
// never read.
//
// Its cascade entry's Type and Model are "extractive".
type Summarizer struct {
	// Count counts the tokens of a text; nil: an estimate of one token per 3 bytes.
	Count func(string) int
}

var (
	_ llm.Completer        = Summarizer{}
	_ llm.TranscriptReader = Summarizer{}
)

// ReadsTranscript is true: a request about a conversation is read from its Transcript,
// Previous and Running only (see llm.TranscriptReader).
func (Summarizer) ReadsTranscript() bool { return true }

// Complete summarizes the request's conversation.
func (x Summarizer) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	count := x.Count
	if count == nil {
		count = estimateTokens
	}
	budget := req.MaxTokens
	if req.TargetTokens > 0 && (budget <= 0 || req.TargetTokens < budget) {
		budget = req.TargetTokens
	}
	if budget <= 0 {
		budget = DefaultTokens
	}
	var text string
	var promptTokens int
	if len(req.Transcript) > 0 || req.Running != "" || req.Previous != "" {
		// The summary this one updates and the summary of the parts before are folded in
		// as an earlier summary is, section by section, ahead of the new messages.
		msgs := req.Transcript // read only: not copied when nothing goes ahead of it
		if req.Previous != "" || req.Running != "" {
			msgs = nil
			for _, earlier := range []string{req.Previous, req.Running} {
				if earlier != "" {
					msgs = append(msgs, transcript.Message{Role: transcript.RoleSummary, Text: earlier})
				}
			}
			msgs = append(msgs, req.Transcript...)
		}
		// The transcript as rendered is only counted: it is let go before the summary is
		// written (a long conversation renders to the size of its text again).
		promptTokens = count(transcript.Render(msgs, transcript.Options{}))
		text = summarizeTranscript(msgs, budget, count, headingsOf(req.Headings))
	} else {
		input := userText(req.Messages)
		promptTokens = count(input)
		text = summarizePlain(input, budget, count)
	}
	if strings.TrimSpace(text) == "" {
		text = "(empty)"
	}
	return llm.Response{
		Text:             text,
		FinishReason:     "stop",
		Model:            "extractive",
		PromptTokens:     promptTokens,
		CompletionTokens: count(text),
	}, nil
}

// estimateTokens is the count used without a Count function: one token per 3 bytes, on the
// safe side of the 3.5 to 4.5 bytes a token of English or JSON takes with OpenAI's encodings,
// so a summary sized with it fits its budget in the caller's tokens.
func estimateTokens(s string) int { return (len(s) + 2) / 3 }

// userText is the content of the user messages, one after the other.
func userText(msgs []llm.Message) string {
	var parts []string
	for _, m := range msgs {
		if m.Role == "user" {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n\n")
}

// The sections of a summary, numbered as in package transcript, which names their headings.
const (
	secGoal      = transcript.SectionGoal
	secDecisions = transcript.SectionDecisions
	secWork      = transcript.SectionWork
	secNext      = transcript.SectionNext
	secFacts     = transcript.SectionFacts
	numSections  = transcript.NumSections
)

// sectionOf recognises a heading of an earlier summary; -1 when it is none of ours.
func sectionOf(line string) int { return transcript.SectionOf(line) }

// headingsOf returns the heading of each section: the request's (the headings a prompt of
// one's own declares), else the built-in one.
func headingsOf(custom []string) func(int) string {
	return func(sec int) string {
		if sec < len(custom) && custom[sec] != "" {
			return custom[sec]
		}
		return transcript.Heading(sec)
	}
}

// Ranks: an item of higher rank is kept longer when the budget is short. These are the ranks
// of the current task's lines and of the whole thread's (constraints, facts); the lines of a
// finished task but its outcome rank a tenth of theirs, below every line of the current task,
// so that old finished tasks shrink to their outcome line first.
const (
	rankGoal       = 100
	rankConstraint = 95
	rankNext       = 90
	rankError      = 60
	rankEarlier    = 50 // a line of an earlier summary
	rankOutcome    = 45 // the outcome line of a finished task
	rankWork       = 40
	rankDecision   = 30
)

// item is one line of a summary.
type item struct {
	section, rank, order int
	// task is the task the line is of (1, 2, ...: see summarizeTranscript); 0 for the whole
	// thread (the user's constraints, key facts).
	task   int
	text   string
	tokens int
}

// shortReply: a user message of at most this many words ("Yes, please.") never begins a task.
const shortReply = 5

// closings are the first words of a user message that closes the task rather than asking for
// another ("Thank you, that is all I needed.").
var closings = []string{"thanks", "thank", "ok", "okay", "great", "perfect", "no", "nope", "cool", "awesome", "bye", "goodbye"}

// beginsTask reports whether a user message (text) begins a new task, the current one having
// done its work (done: a call that changes something succeeded) and the assistant's last
// message being a reply in text (lastReply).
func beginsTask(text string, done bool, lastReply string) bool {
	words := strings.Fields(strings.ToLower(text))
	if !done || lastReply == "" || len(words) <= shortReply {
		return false
	}
	return !slices.Contains(closings, strings.Trim(words[0], ".,!;:"))
}

// writeDone reports whether a line of work done (an extractive one: name(args) -> result) is a
// call that changes something and succeeded.
func writeDone(line string) bool {
	name, _, ok := strings.Cut(line, "(")
	if !ok || strings.ContainsAny(name, " \t") || facts.IsLookup(name) {
		return false
	}
	_, result, ok := strings.Cut(line, ") -> ")
	return ok && !strings.HasPrefix(result, "error: ")
}

// taskTagRE is the tag a finished task's lines carry in a summary ("[task 2] ").
var taskTagRE = regexp.MustCompile(`^\[task (\d+)\] `)

// addFunc adds a line to section sec with its rank and task and returns its index, -1 when
// the text is empty.
type addFunc func(sec, rank, task int, text string) int

var (
	// errorLineRE matches lines that report an error, not lines that merely contain the
	// word (source code listings do): a line that starts with an error word (after an
	// optional "file:line:" position), an exception name with a colon, a JSON "error" key,
	// or a well-known failure phrase.
	errorLineRE = regexp.MustCompile(`(?i)^(?:[\w./-]*[a-z_][\w./-]*:\d+(?::\d+)?:\s*)?(?:error|fatal|panic|exception|traceback|failed|failure)\b` +
		`|^(?-i:[A-Z]\w*(?:Error|Exception))(?::|$)` +
		`|"error"\s*:` +
		`|\b(?:permission denied|no such file or directory|command not found|connection refused|not found|does not exist|cannot be|could not|unable to)\b`)
	// lineNumberRE matches the "12:" that code listings put before a line.
	lineNumberRE = regexp.MustCompile(`^\d+:`)
)

// isErrorLine reports whether a (trimmed) line reports an error. Lines of a numbered code
// listing never do.
func isErrorLine(line string) bool {
	return mayReportError(line) && !lineNumberRE.MatchString(line) && errorLineRE.MatchString(line)
}

// errorWords are the words one of which each branch of errorLineRE holds, in lower case
// ("fail" of failed and failure, "not found" of command not found...).
var errorWords = []string{"error", "fatal", "panic", "exception", "traceback", "fail", "denied", "no such file",
	"not found", "refused", "does not exist", "cannot be", "could not", "unable to"}

// mayReportError is false for an ASCII line without any of errorWords in any case: a line
// errorLineRE cannot match, told without running it (a backtracking match over each line of
// every tool result of a long transcript). A line with other bytes is left to the pattern,
// whose case folding is Unicode's (the long s is an s).
func mayReportError(line string) bool {
	for i := 0; i < len(line); i++ {
		if line[i] >= 0x80 {
			return true
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i] | 0x20 // an ASCII letter in lower case; errorWords start with letters
		if !errorFirst[c] {
			continue
		}
		for _, w := range errorWords {
			if w[0] == c && hasPrefixFold(line[i:], w) {
				return true
			}
		}
	}
	return false
}

// errorFirst marks the first bytes of errorWords.
var errorFirst = func() (first [256]bool) {
	for _, w := range errorWords {
		first[w[0]] = true
	}
	return first
}()

// hasPrefixFold reports whether s starts with prefix (lower case), ASCII letters compared in
// any case.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// summarizeTranscript writes the sections of a summary of msgs within budget tokens:
//
//   - Goal and constraints: each task's request, and the user's constraints as the fact
//     ledger (package facts) finds them, quoted;
//   - Decisions: the first sentence of each assistant message;
//   - Work done: each tool call as name(key args) -> the first line of its result, or its
//     error line; a finished task's outcome;
//   - Open tasks and next step: the last user message and the assistant's last step;
//   - Key facts: the rest of the ledger (ids, paths, URLs, amounts, dates, errors...).
//
// The first user message begins the first task; a later one begins a new task when the
// current one has done its work (a call that changes something succeeded), the assistant
// replied in text since, and the message is more than shortReply words and does not close
// the conversation ("Thank you, ...") (see beginsTask). The newest task is the current one;
// the others are finished, and their lines are tagged "[task N]", their outcome (the
// assistant's last reply in text, else the last call) on a line "Outcome: ..." under Work done.
//
// The lines of an earlier summary in the transcript are carried into the section of the same
// heading, with their task (see earlier). When the budget is short, lines are dropped lowest
// rank first, oldest first: the lines of finished tasks but their outcomes first, then the
// current task's decisions, work done, outcomes, earlier lines, errors; the goal, the
// constraints and the last state go last. The facts take at most half of what the goal and last
// state leave.
func summarizeTranscript(msgs []transcript.Message, budget int, count func(string) int, heading func(int) string) string {
	var items []item
	add := func(sec, rank, task int, text string) int {
		text = strings.TrimSpace(text)
		if text == "" {
			return -1
		}
		items = append(items, item{section: sec, rank: rank, task: task, order: len(items), text: text})
		return len(items) - 1
	}
	results := map[int]string{} // index of a call item -> its result
	open := map[string][]int{}  // call id -> items waiting for their result
	reply := map[int]int{}      // task -> the item of its last reply
	replies := map[int]string{} // item of a reply -> the whole reply
	cur := 0                    // the current task; 0 before the first
	task := func() int { return max(cur, 1) }
	var goals []string
	lastUser, lastStep := "", ""
	lastReply := ""                    // the assistant's last message when it was a reply in text, else ""
	done := false                      // a call that changes something succeeded in the current task
	writes := map[int]bool{}           // call items of tools that change something
	folded := false                    // an earlier summary holds the current task's goal
	labels := map[string]facts.Label{} // what the values of an earlier summary's key facts are
	asked := false                     // a user message was read after the earlier summary
	for _, m := range msgs {
		text := strings.TrimSpace(m.Text)
		switch m.Role {
		case transcript.RoleSummary:
			cur, lastReply, done = earlier(text, cur, add, reply)
			maps.Copy(labels, facts.Labels(text))
			folded, asked = true, false
		case "user":
			if text == "" {
				break
			}
			if cur == 0 || beginsTask(text, done, lastReply) {
				cur++
				add(secGoal, rankGoal, cur, "Goal: "+cut(oneLine(text), 300))
				goals = append(goals, text)
				lastUser, done = "", false
			} else if folded && !asked {
				add(secGoal, rankGoal, cur, "Later request: "+cut(oneLine(text), 300))
				goals = append(goals, text)
			} else {
				lastUser = text
			}
			asked = true
		case "assistant":
			if text != "" {
				i := add(secDecisions, rankDecision, task(), cut(firstSentence(text), 200))
				lastStep, lastReply = text, text
				if len(m.ToolCalls) == 0 { // a reply; text beside calls says what they are for
					reply[task()], replies[i] = i, text
				} else {
					delete(reply, task()) // the calls are the newest outcome
				}
			}
			for _, tc := range m.ToolCalls {
				i := add(secWork, rankWork, task(), callText(tc))
				open[tc.ID] = append(open[tc.ID], i)
				writes[i] = !facts.IsLookup(tc.Name)
				lastStep, lastReply = "called "+callText(tc), ""
			}
		case "tool":
			result := resultLine(text)
			if p := open[m.ToolCallID]; len(p) > 0 {
				i := p[len(p)-1]
				open[m.ToolCallID] = p[:len(p)-1]
				results[i] = result
				if writes[i] && items[i].task == task() && !strings.HasPrefix(result, "error: ") {
					done = true
				}
			}
		}
	}
	withResults(items, results)
	// The ledger of the messages, each handed to it as it is read: a long conversation is not
	// copied into a list of its own first.
	ledger := facts.ExtractFunc(len(msgs), func(i int) facts.Message {
		fm := facts.FromTranscript(msgs[i])
		fm.Content = strings.TrimSpace(msgs[i].Text)
		return fm
	})
	facts.Relabel(ledger, labels)
	rest := ledgerItems(ledger, oneLine(strings.Join(goals, " ")), add)
	if lastUser != "" {
		add(secNext, rankNext, task(), "Last user message: "+cut(oneLine(lastUser), 300))
	}
	if lastStep != "" {
		add(secNext, rankNext, task(), "Last assistant step: "+cut(oneLine(lastStep), 300))
	}
	finishTasks(items, task(), reply, replies)
	return fitItems(items, task(), rest, budget, count, heading)
}

// finishTasks ranks and tags the lines of the tasks before cur, the finished ones: each keeps
// one outcome line (its last reply, else its last line of work done, else its last decision)
// at rankOutcome, its other lines rank a tenth of what they would; every item is then written
// as a list line.
func finishTasks(items []item, cur int, reply map[int]int, replies map[int]string) {
	outcome := map[int]int{} // finished task -> its outcome item
	for t, i := range reply {
		if t < cur {
			outcome[t] = i
		}
	}
	for i, it := range items {
		if it.task == 0 || it.task >= cur {
			continue
		}
		if _, ok := reply[it.task]; ok {
			continue
		}
		j, ok := outcome[it.task]
		switch {
		case it.section == secWork: // the last line of work done
			outcome[it.task] = i
		case it.section == secDecisions && (!ok || items[j].section != secWork):
			outcome[it.task] = i
		}
	}
	said := map[int]string{} // finished task -> what its outcome line says
	for t, i := range outcome {
		text := items[i].text
		if whole, ok := replies[i]; ok {
			text = cut(oneLine(whole), 200)
		}
		text = strings.TrimPrefix(strings.TrimPrefix(text, "Last assistant step: "), "Outcome: ")
		said[t] = text
		items[i].section, items[i].rank, items[i].text = secWork, rankOutcome, "Outcome: "+text
	}
	for i := range items {
		it := &items[i]
		if it.task == 0 || it.task >= cur {
			it.text = "- " + it.text
			continue
		}
		j, ok := outcome[it.task]
		switch {
		case ok && j == i:
		case it.section == secDecisions && strings.HasPrefix(said[it.task], strings.TrimSuffix(it.text, "...")):
			it.rank = -1 // the outcome line says it: never kept (see fitItems)
		default:
			it.rank /= 10
		}
		it.text = "- [task " + strconv.Itoa(it.task) + "] " + it.text
	}
}

// withResults appends to each call item its result (results: index of the item -> result
// line); a call that failed ranks as an error.
func withResults(items []item, results map[int]string) {
	for i, r := range results {
		items[i].text += " -> " + cut(r, 100)
		if strings.HasPrefix(r, "error: ") {
			items[i].rank = rankError
		}
	}
}

// ledgerItems adds the user's constraints of the ledger that the goal does not quote already,
// and returns the facts left for the key facts section (tool calls are in Work done already).
func ledgerItems(ledger []facts.Fact, goal string, add addFunc) (rest []facts.Fact) {
	for _, f := range ledger {
		switch f.Kind {
		case facts.KindConstraint:
			if !strings.Contains(goal, f.Text) {
				add(secGoal, rankConstraint, 0, `The user: "`+f.Text+`"`)
			}
		case facts.KindToolCall: // in Work done already
		default:
			rest = append(rest, f)
		}
	}
	return rest
}

// earlier carries the lines of an earlier summary into the sections of the same heading, each
// with its task: a line tagged "[task N]" is of that finished task; the other lines of the goal,
// decisions, work and next sections are of the task that was current then (the one after the
// last tagged, or cur when higher), and the user's quoted constraints and the key facts of the
// whole thread. The earlier "next step" is history now: its lines go under Work done, its last
// assistant step standing as the task's reply (its outcome once the task is finished). It
// returns the current task, that step when it was a reply in text, and whether the current
// task has done its work (a line of work done is a call that changes something and succeeded).
func earlier(text string, cur int, add addFunc, reply map[int]int) (int, string, bool) {
	tagged := 0
	for line := range strings.SplitSeq(text, "\n") {
		if m := taskTagRE.FindStringSubmatch(strings.TrimPrefix(strings.TrimSpace(line), "- ")); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n < 1<<20 {
				tagged = max(tagged, n)
			}
		}
	}
	task := max(cur, tagged+1)
	sec, last, done := secFacts, "", false
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "Summary of ") {
			continue
		}
		if s := sectionOf(line); s >= 0 {
			sec = s
			continue
		}
		if strings.HasPrefix(line, "#") {
			sec = secFacts // another heading: its lines are kept as facts
			continue
		}
		line = strings.TrimPrefix(line, "- ")
		t := task
		if m := taskTagRE.FindStringSubmatch(line); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n < task {
				t, line = n, line[len(m[0]):]
			}
		}
		switch {
		case sec == secFacts:
			add(secFacts, rankEarlier, 0, line)
		case sec == secGoal && t == task && strings.HasPrefix(line, `The user: "`):
			add(secGoal, rankConstraint, 0, line)
		case sec == secGoal:
			add(secGoal, rankConstraint, t, line)
		case sec == secNext:
			i := add(secWork, rankEarlier, t, line)
			if step, ok := strings.CutPrefix(line, "Last assistant step: "); ok && i >= 0 {
				reply[t] = i
				last = step
				if strings.HasPrefix(step, "called ") {
					last = ""
				}
			}
		case strings.HasPrefix(line, "Outcome: "):
			if i := add(secWork, rankEarlier, t, line); i >= 0 {
				reply[t] = i
			}
		default:
			add(sec, rankEarlier, t, line)
			done = done || (sec == secWork && t == task && writeDone(line))
		}
	}
	return task, last, done
}

// fitItems renders the items and the facts section within budget.
// The current task's (cur) goal lines lead their section.
func fitItems(items []item, cur int, ledger []facts.Fact, budget int, count func(string) int, heading func(int) string) string {
	used := 0
	var titled [numSections]bool // the section's title is counted in used
	cost := func(sec, tokens int) int {
		if titled[sec] {
			return tokens
		}
		return tokens + count(heading(sec)) + 2
	}
	byRank := make([]int, len(items))
	for i := range items {
		items[i].tokens = count(items[i].text) + 1
		byRank[i] = i
	}
	sort.SliceStable(byRank, func(a, b int) bool {
		ia, ib := items[byRank[a]], items[byRank[b]]
		if ia.rank != ib.rank {
			return ia.rank > ib.rank
		}
		return ia.order > ib.order // newest first
	})
	keep := make([]bool, len(items))
	take := func(minRank int) {
		for _, i := range byRank {
			if c := cost(items[i].section, items[i].tokens); !keep[i] && items[i].rank >= minRank && used+c <= budget {
				keep[i], titled[items[i].section] = true, true
				used += c
			}
		}
	}
	take(rankNext)
	factLines, _ := facts.Section(ledger, (budget-used)/2-cost(secFacts, 0), count)
	if _, body, ok := strings.Cut(factLines, "\n"); ok {
		factLines = body // the section's own title: ours is the Key facts heading
		used += cost(secFacts, count(factLines)+1)
		titled[secFacts] = true
	} else {
		factLines = ""
	}
	heldAgain(items, ledger, factLines)
	take(0) // an item of negative rank is never kept
	render := func() string {
		var b strings.Builder
		for sec := range numSections {
			var lines, after []string
			for i, it := range items {
				if !keep[i] || it.section != sec {
					continue
				}
				if sec == secGoal && it.task != cur {
					after = append(after, it.text)
				} else {
					lines = append(lines, it.text)
				}
			}
			sort.SliceStable(after, func(a, b int) bool { return taskOf(after[a]) < taskOf(after[b]) })
			lines = append(lines, after...)
			if sec == secFacts && factLines != "" {
				lines = append(lines, factLines)
			}
			if len(lines) == 0 {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(heading(sec) + "\n" + strings.Join(lines, "\n"))
		}
		return b.String()
	}
	out := render()
	// Token counts do not always add up line by line: drop the lowest lines until it fits.
	for k := len(byRank) - 1; k >= 0 && count(out) > budget; k-- {
		if keep[byRank[k]] {
			keep[byRank[k]] = false
			out = render()
		}
	}
	return fitChars(out, budget, count)
}

// heldAgain ranks never to be kept (-1) the key facts lines of an earlier summary (see
// earlier) that factLines, the key facts rendered from the ledger, say again: a line of the
// section's shape (facts.IsSectionLine) or a fact of the ledger alone whose facts are all
// there. Any other line (a model's prose) stays, and so does a line with facts factLines
// lacks.
func heldAgain(items []item, ledger []facts.Fact, factLines string) {
	if factLines == "" {
		return
	}
	check := facts.NewChecker(ledger)
	there := check.Kept(factLines)
	alone := map[string]bool{} // the facts rendered one a line, as a section renders them
	for _, f := range ledger {
		alone[f.Text], alone[`"`+f.Text+`"`] = true, true
		if f.Outcome != "" {
			alone[f.Text+" -> "+f.Outcome] = true
		}
	}
	for i := range items {
		it := &items[i]
		line := strings.TrimPrefix(it.text, "- ")
		if it.section != secFacts || it.rank < 0 || !facts.IsSectionLine(line) && !alone[line] {
			continue
		}
		if facts.IsGroupTitle(line) {
			it.rank = -1
			continue
		}
		some, all := false, true
		for j, held := range check.Kept(it.text) {
			if held {
				some = true
				all = all && there[j]
			}
		}
		if some && all {
			it.rank = -1
		}
	}
}

// taskOf is the task a rendered line is tagged with; 0 when it has none.
func taskOf(line string) int {
	if m := taskTagRE.FindStringSubmatch(strings.TrimPrefix(line, "- ")); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// firstSentence is the text up to the end of its first sentence or line.
func firstSentence(s string) string {
	s = oneLine(s)
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && s[i+1] == ' ' && i > 20 {
			return s[:i+1]
		}
	}
	return s
}

// callText renders a tool call as name(key=value, ...), with short scalar arguments only.
func callText(tc transcript.ToolCall) string {
	var args map[string]any
	if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
		raw := strings.TrimSpace(tc.Arguments)
		if raw == "" || raw == "{}" {
			return tc.Name + "()"
		}
		return tc.Name + "(" + cut(oneLine(raw), 60) + ")"
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		var v string
		switch a := args[k].(type) {
		case string:
			v = cut(oneLine(a), 40)
		case float64, bool:
			v = fmt.Sprint(a)
		case nil:
			v = "null"
		default:
			v = "..."
		}
		parts = append(parts, k+"="+v)
		if len(parts) == 4 && len(keys) > 4 {
			parts = append(parts, "...")
			break
		}
	}
	return tc.Name + "(" + strings.Join(parts, ", ") + ")"
}

// resultLine is a tool result's first error line, else its first non-empty line.
func resultLine(text string) string {
	firstLine := ""
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if isErrorLine(line) {
			return "error: " + oneLine(line)
		}
		if firstLine == "" {
			firstLine = oneLine(line)
		}
	}
	if firstLine == "" {
		return "(empty)"
	}
	return firstLine
}

// oneLine joins a text's lines and spaces into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cut shortens s to about n bytes, on a rune boundary, marking the cut with "...".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 3 {
		return "..."
	}
	i := n - 3
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// summarizePlain keeps the first and last lines of a text that is not a transcript, as many
// as fit the budget, around a marker line.
func summarizePlain(text string, budget int, count func(string) int) string {
	text = strings.TrimSpace(text)
	if count(text) <= budget {
		return text
	}
	var lines []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimRight(l, " \t\r"); strings.TrimSpace(l) != "" {
			lines = append(lines, cut(l, 400))
		}
	}
	var head, tail []string
	used := count("[... 999999 lines omitted ...]") + 1
	i, j := 0, len(lines)-1
	for i <= j {
		l := lines[i]
		fromHead := len(head) <= len(tail)
		if !fromHead {
			l = lines[j]
		}
		need := count(l) + 1
		if used+need > budget {
			break
		}
		used += need
		if fromHead {
			head = append(head, l)
			i++
		} else {
			tail = append(tail, l)
			j--
		}
	}
	slices.Reverse(tail)
	out := strings.Join(head, "\n")
	if omitted := j - i + 1; omitted > 0 {
		out += fmt.Sprintf("\n[... %d lines omitted ...]\n", omitted)
	} else if len(tail) > 0 {
		out += "\n"
	}
	out += strings.Join(tail, "\n")
	return fitChars(strings.TrimSpace(out), budget, count)
}

// fitChars cuts s until count(s) <= budget, keeping at least a few characters.
func fitChars(s string, budget int, count func(string) int) string {
	for count(s) > budget && len(s) > 16 {
		s = cut(s, len(s)*3/4)
	}
	return s
}
