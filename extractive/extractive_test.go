package extractive_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/transcript"
)

func TestExtractiveConversations(t *testing.T) {
	for _, path := range conversationPaths(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			msgs := loadConversation(t, path)
			msgs = msgs[1:] // without the system prompt
			input := transcript.Render(msgs, transcript.Options{})
			for _, budget := range []int{150, 600, 2000} {
				x := extractive.Summarizer{}
				resp := summarize(t, x, msgs, budget)
				if again := summarize(t, x, msgs, budget); again.Text != resp.Text {
					t.Fatalf("budget %d: not deterministic", budget)
				}
				if got := (len(resp.Text) + 2) / 3; got > budget {
					t.Errorf("budget %d: summary has %d tokens", budget, got)
				}
				if len(resp.Text) >= len(input) {
					t.Errorf("budget %d: summary (%d bytes) not shorter than its input (%d)", budget, len(resp.Text), len(input))
				}
				if resp.CompletionTokens != (len(resp.Text)+2)/3 || resp.PromptTokens != (len(input)+2)/3 {
					t.Errorf("token counts %d/%d", resp.PromptTokens, resp.CompletionTokens)
				}
				if !strings.Contains(resp.Text, "## Goal and constraints\n- Goal: ") {
					t.Errorf("budget %d: no goal:\n%s", budget, resp.Text)
				}
			}
			// With room, every tool call is there with its name.
			resp := summarize(t, extractive.Summarizer{}, msgs, 8000)
			for _, m := range msgs {
				for _, c := range m.ToolCalls {
					if !strings.Contains(resp.Text, c.Name+"(") {
						t.Errorf("tool call %s missing from:\n%s", c.Name, resp.Text)
						return
					}
				}
			}
			first := ""
			for _, m := range msgs {
				if m.Role == "user" {
					first = strings.Join(strings.Fields(m.Text), " ")
					break
				}
			}
			if len(first) > 30 {
				first = first[:30]
			}
			if !strings.Contains(resp.Text, first) {
				t.Errorf("first user request %q missing", first)
			}
		})
	}
}

func TestExtractiveContent(t *testing.T) {
	msgs := []transcript.Message{
		{Role: transcript.RoleSummary, Text: "The user is Omar (omar_davis_3817)."},
		{Seq: 4, Role: "user", Text: "  Please cancel reservation ZFA04Y.  "},
		{Seq: 5, Role: "assistant", Text: "Looking it up.", ToolCalls: []transcript.ToolCall{
			{ID: "call_1", Name: "get_reservation_details", Arguments: `{"reservation_id":"ZFA04Y"}`},
			{ID: "call_2", Name: "cancel_reservation", Arguments: `{"reservation_id":"ZFA04Y","reason":"change of plan"}`},
		}},
		{Seq: 6, Role: "tool", Name: "get_reservation_details", ToolCallID: "call_1", Text: "{\"flights\": [\"HAT170\"]}\nmore"},
		{Seq: 7, Role: "tool", Name: "cancel_reservation", ToolCallID: "call_2", Text: "Error: reservation ZFA04Y cannot be cancelled"},
		{Seq: 8, Role: "assistant", Text: "I could not cancel it: the fare is not refundable."},
	}
	resp := summarize(t, extractive.Summarizer{}, msgs, 1000)
	for _, want := range []string{
		"## Goal and constraints\n- Later request: Please cancel reservation ZFA04Y.",
		"## Decisions\n- Looking it up.\n- I could not cancel it: the fare is not refundable.",
		`- get_reservation_details(reservation_id=ZFA04Y) -> {"flights": ["HAT170"]}`,
		"- cancel_reservation(reason=change of plan, reservation_id=ZFA04Y) -> error: Error: reservation ZFA04Y cannot be cancelled",
		"## Open tasks and next step\n- Last assistant step: I could not cancel it",
		"## Key facts\n- The user is Omar (omar_davis_3817).", // the earlier summary's line, carried
		"HAT170",
	} {
		if !strings.Contains(resp.Text, want) {
			t.Errorf("summary lacks %q:\n%s", want, resp.Text)
		}
	}
	if strings.Contains(resp.Text, "call_1") {
		t.Errorf("call ids in the summary:\n%s", resp.Text)
	}

	// A tight budget drops decisions and work before the goal and the last state.
	tight := summarize(t, extractive.Summarizer{}, msgs, 60)
	if !strings.Contains(tight.Text, "Please cancel reservation") || strings.Contains(tight.Text, "Looking it up") {
		t.Errorf("tight summary:\n%s", tight.Text)
	}
}

// An earlier summary written with the prompt's headings is folded in section by section.
func TestExtractiveFoldsEarlierSummary(t *testing.T) {
	earlier := "Summary of the earlier conversation (messages 2 to 9):\n\n## Goal and constraints\n- Goal: move my flight to May 24.\n- The user: \"never a basic economy fare\"\n\n## Work done\n- get_user_details(user_id=mia_li_3668) -> ok"
	msgs := []transcript.Message{
		{Role: transcript.RoleSummary, Text: earlier},
		{Seq: 10, Role: "user", Text: "Also add a bag please."},
		{Seq: 11, Role: "assistant", Text: "Added one bag for $50."},
	}
	resp := summarize(t, extractive.Summarizer{}, msgs, 1000)
	for _, want := range []string{"## Goal and constraints\n- Goal: move my flight to May 24.", "- Later request: Also add a bag please.", `- The user: "never a basic economy fare"`,
		"## Work done\n- get_user_details(user_id=mia_li_3668) -> ok"} {
		if !strings.Contains(resp.Text, want) {
			t.Errorf("summary lacks %q:\n%s", want, resp.Text)
		}
	}
}

func TestExtractivePlainText(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "log line %04d: something happened\n", i)
	}
	input := b.String()
	resp := summarizePlain(t, extractive.Summarizer{}, input, 200)
	if !strings.HasPrefix(resp.Text, "log line 0000") || !strings.HasSuffix(resp.Text, "log line 1999: something happened") ||
		!strings.Contains(resp.Text, "lines omitted") {
		t.Errorf("plain summary:\n%s", resp.Text)
	}
	if got := (len(resp.Text) + 2) / 3; got > 200 {
		t.Errorf("%d tokens, budget 200", got)
	}
	// A custom counter is used for the budget.
	words := func(s string) int { return len(strings.Fields(s)) }
	resp = summarizePlain(t, extractive.Summarizer{Count: words}, input, 50)
	if n := words(resp.Text); n > 50 || n < 20 || resp.CompletionTokens != n {
		t.Errorf("%d words (reported %d), budget 50:\n%s", n, resp.CompletionTokens, resp.Text)
	}
	// Short text is kept whole; no text still gives a non-empty answer.
	if resp := summarizePlain(t, extractive.Summarizer{}, "just this", 100); resp.Text != "just this" {
		t.Errorf("short text = %q", resp.Text)
	}
	summarizePlain(t, extractive.Summarizer{}, "", 100)
	one := strings.Repeat("x", 10000)
	if resp := summarizePlain(t, extractive.Summarizer{}, one, 100); len(resp.Text) > 400 {
		t.Errorf("one long line gives %d bytes", len(resp.Text))
	}
}

// FuzzExtractive states the summarizer's invariants, for a conversation (the input parsed as a
// transcript) and for plain text: a non-empty answer, the same for the same input, within the
// budget (a few tokens at least), and no error.
func FuzzExtractive(f *testing.F) {
	f.Add("[#1 user]\nfix bug #12 in main.go\n[#2 assistant]\n-> call bash {\"cmd\":\"go test\"} (id c1)\n[#3 tool name=bash call=c1]\nFAIL: main.go:3: error: x", 40)
	f.Add("plain text\nwith lines\n", 1)
	f.Add("", 0)
	f.Add("[summary]\n- earlier\n[#9 tool call=zz]\n", 3)
	f.Add(strings.Repeat("[#1 user]\nW123 ZFA04Y\n", 200), 25)
	f.Fuzz(func(t *testing.T, input string, budget int) {
		budget %= 5000
		limit := budget
		if limit <= 0 {
			limit = extractive.DefaultTokens
		}
		x := extractive.Summarizer{}
		for _, req := range []llm.Request{
			{MaxTokens: budget, Messages: []llm.Message{{Role: "user", Content: input}}},
			{MaxTokens: budget, Transcript: transcript.Parse(input), Running: input[:len(input)/4]},
		} {
			a, err := x.Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := x.Complete(context.Background(), req)
			if strings.TrimSpace(a.Text) == "" || a.Text != b.Text {
				t.Fatalf("text %q then %q", a.Text, b.Text)
			}
			if got := (len(a.Text) + 3) / 4; got > max(limit, 5) {
				t.Fatalf("%d tokens for a budget of %d:\n%s", got, limit, a.Text)
			}
		}
	})
}

// sentinels stand for the instructions of a request: no line of them may reach a summary.
var sentinels = []string{
	"INSTRUCTION-SYSTEM: write the sections in this order.",
	"INSTRUCTION-USER: Write the summary now, in at most 612 words.",
	"</transcript-INSTRUCTION>",
}

// The summarizer reads the conversation from Transcript and Running only: the instructions in
// Messages, and the framing around the rendered transcript, never reach the summary, even when
// the conversation holds an earlier summary (a re-compaction) and the request is in parts.
func TestExtractiveIgnoresInstructions(t *testing.T) {
	earlier := "Summary of the earlier conversation (messages 2 to 9):\n\n## Goal and constraints\n- Goal: move my flight to May 24.\n\n## Key facts\n- ZFA04Y"
	msgs := []transcript.Message{
		{Role: transcript.RoleSummary, Text: earlier},
		{Seq: 10, Role: "user", Text: "Also add a bag please; never more than $60."},
		{Seq: 11, Role: "assistant", Text: "Added one bag for $50."},
	}
	framed := sentinels[0] + "\n" + sentinels[2] + "\n" + transcript.Render(msgs, transcript.Options{}) + "\n" + sentinels[2] + "\n" + sentinels[1]
	for _, running := range []string{"", "## Work done\n- get_user_details(user_id=mia_li_3668) -> ok"} {
		req := llm.Request{MaxTokens: 2000, Transcript: msgs, Running: running, Messages: []llm.Message{
			{Role: "system", Content: sentinels[0]}, {Role: "user", Content: framed},
		}}
		resp := complete(t, extractive.Summarizer{}, req)
		if strings.Contains(resp.Text, "INSTRUCTION") || strings.Contains(resp.Text, "612") {
			t.Errorf("running %q: an instruction reached the summary:\n%s", running, resp.Text)
		}
		for _, want := range []string{"Goal: move my flight to May 24.", "never more than $60", "ZFA04Y"} {
			if !strings.Contains(resp.Text, want) {
				t.Errorf("running %q: summary lacks %q:\n%s", running, want, resp.Text)
			}
		}
		if running != "" && !strings.Contains(resp.Text, "get_user_details(user_id=mia_li_3668) -> ok") {
			t.Errorf("the running summary is not folded in:\n%s", resp.Text)
		}
	}
	// Without a Transcript the user messages are summarized as text; system messages are
	// instructions and never read.
	resp := complete(t, extractive.Summarizer{}, llm.Request{MaxTokens: 200, Messages: []llm.Message{
		{Role: "system", Content: sentinels[0]}, {Role: "user", Content: "rename the order W123"}, {Role: "developer", Content: sentinels[1]},
	}})
	if resp.Text != "rename the order W123" {
		t.Errorf("plain summary = %q", resp.Text)
	}
}

// The headings the summary is written under are package transcript's, in its order.
func TestExtractiveHeadings(t *testing.T) {
	msgs := loadConversation(t, "../testdata/conversations/"+firstConversation(t))
	out := summarize(t, extractive.Summarizer{}, msgs, 100000).Text
	last := -1
	for line := range strings.SplitSeq(out, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		sec := -1
		for k := range transcript.NumSections {
			if line == transcript.Heading(k) {
				sec = k
			}
		}
		if sec <= last {
			t.Errorf("heading %q is not one of package transcript's, or out of order:\n%s", line, out)
		}
		last = sec
	}
	if last != transcript.SectionFacts {
		t.Errorf("the summary ends with section %d, want the key facts:\n%s", last, out)
	}
}

// TestExtractiveSummaryOfSummaryAlone: summarizing an earlier summary with no new message
// carries its lines and writes no empty "Later request:" line (issue 20: the last summary of
// every thread held one).
func TestExtractiveSummaryOfSummaryAlone(t *testing.T) {
	msgs := []transcript.Message{{Role: transcript.RoleSummary, Text: "## Goal and constraints\n- Goal: downgrade every reservation to economy.\n\n## Work done\n- update_reservation_flights(reservation_id=JG7FMM) -> ok"}}
	resp := summarize(t, extractive.Summarizer{}, msgs, 1000)
	if strings.Contains(resp.Text, "Later request") {
		t.Errorf("a summary of a summary alone names a later request:\n%s", resp.Text)
	}
	for _, want := range []string{"downgrade every reservation to economy", "update_reservation_flights(reservation_id=JG7FMM) -> ok"} {
		if !strings.Contains(resp.Text, want) {
			t.Errorf("summary lacks %q:\n%s", want, resp.Text)
		}
	}
}

// TestKeyFactsKeepKeysOverRecompactions: a summary that folds an earlier one keeps what its
// values are (their key and record), and says each key fact once, not once more for every
// summary folded in.
func TestKeyFactsKeepKeysOverRecompactions(t *testing.T) {
	msgs := loadConversation(t, "../testdata/conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl")
	prev := ""
	for _, part := range [][2]int{{1, 30}, {30, 45}, {45, 62}} {
		r := complete(t, extractive.Summarizer{}, llm.Request{Previous: prev, Transcript: msgs[part[0]:part[1]], MaxTokens: 4000})
		prev = r.Text
	}
	_, keyFacts, ok := strings.Cut(prev, "## Key facts\n")
	if !ok {
		t.Fatalf("no key facts:\n%s", prev)
	}
	for _, want := range []string{"user_id omar_davis_3817", "Juan Ahmed: dob 1992-11-19",
		"- reservation_id JG7FMM: ", "- flight_number HAT080: date 2024-05-28; price "} {
		if !strings.Contains(keyFacts, want) {
			t.Errorf("key facts lack %q:\n%s", want, keyFacts)
		}
	}
	for _, v := range []string{"1992-11-19", "omar_davis_3817", "HAT080"} {
		if n := strings.Count(keyFacts, v); n != 1 {
			t.Errorf("key facts say %s %d times:\n%s", v, n, keyFacts)
		}
	}
}
