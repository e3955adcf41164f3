package main

import (
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
)

// TestEventTextEveryKind: every kind of cascade event (cascade.EventKinds) has words of its own
// (a wait says nothing: the retry before it said how long).
func TestEventTextEveryKind(t *testing.T) {
	t.Parallel()
	want := map[cascade.EventKind]string{
		cascade.EventTry: "p: trying (attempt 1)", cascade.EventRetry: "p: timeout, retry in 1s", cascade.EventWait: "",
		cascade.EventSkip: "p: cooling down, skipped", cascade.EventSkipWindow: "p: skipped, the input does not fit its context window",
		cascade.EventSkipBudget: "p: skipped, no time left for it", cascade.EventSkipCost: "p: skipped, its estimated cost is over max_cost",
		cascade.EventFail: "p: failed (timeout)", cascade.EventOK: "p: ok",
		cascade.EventWindow: "p: context window 1024 tokens",
	}
	for _, k := range cascade.EventKinds {
		w, ok := want[k]
		if !ok {
			t.Errorf("%s: no words for this kind in the test", k)
			continue
		}
		if got := eventText(cascade.Event{Provider: "p", Kind: k, Attempt: 1, Wait: time.Second, Class: "timeout", Window: 1024}); got != w {
			t.Errorf("%s: %q, want %q", k, got, w)
		}
	}
}

// TestReportTextCountsInEnglish: the text of a report counts in English, shows the messages
// appended while it ran apart, and a compaction that applied nothing summarized none.
func TestReportTextCountsInEnglish(t *testing.T) {
	t.Parallel()
	applied := memory.Report{ID: 3, Thread: "t", Status: memory.StatusApplied, Reason: compact.ReasonThreshold,
		TokensBefore: 4000, TokensAfter: 2500, TokensAppended: 57, MessagesBefore: 40, MessagesAfter: 20, MessagesAppended: 2,
		SummarizedMessages: 21, KeptMessages: 18, FromSeq: 2, ToSeq: 22, Passes: 1, Chunks: 1, Requests: 1,
		Provider: "offline", Model: "extractive", SummaryTokens: 300, Usage: memory.Usage{Requests: 1}}
	var b strings.Builder
	writeReport(&b, applied)
	for _, want := range []string{"1 pass, 1 chunk,", "1 request to providers", "usage     1 request,",
		"2500 (limit 0); then 2 messages (57 tokens) appended while it ran: 2557 now", "21 summarized (#2-#22)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("applied report: no %q in\n%s", want, b.String())
		}
	}
	applied.Passes, applied.Chunks, applied.Requests = 2, 3, 4
	b.Reset()
	writeReport(&b, applied)
	if want := "2 passes, 3 chunks,"; !strings.Contains(b.String(), want) {
		t.Errorf("no %q in\n%s", want, b.String())
	}
	failed := memory.Report{ID: 3, Thread: "t", Status: memory.StatusFailed, Reason: compact.ReasonForced,
		TokensBefore: 4000, TokensAfter: 4000, MessagesBefore: 40, MessagesAfter: 40, KeptMessages: 39}
	b.Reset()
	writeReport(&b, failed)
	if want := "messages  40 -> 40: none summarized, 39 kept"; !strings.Contains(b.String(), want) {
		t.Errorf("failed report: no %q in\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "appended") {
		t.Errorf("failed report speaks of appended messages:\n%s", b.String())
	}
}
