package extractive_test

import (
	"strings"
	"testing"

	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/transcript"
)

// threeTasks is a thread of three tasks: two finished (a change of flight, a cancellation),
// the third, a booking, under way.
func threeTasks() []transcript.Message {
	call := func(seq int64, text, id, name, args string) transcript.Message {
		return transcript.Message{Seq: seq, Role: "assistant", Text: text, ToolCalls: []transcript.ToolCall{{ID: id, Name: name, Arguments: args}}}
	}
	result := func(seq int64, id, text string) transcript.Message {
		return transcript.Message{Seq: seq, Role: "tool", ToolCallID: id, Text: text}
	}
	return []transcript.Message{
		{Seq: 2, Role: "user", Text: "Please move reservation R1AAAA to flight HAT101 on 2024-05-03."},
		call(3, "Let me look at the reservation first.", "c1", "get_reservation_details", `{"reservation_id":"R1AAAA"}`),
		result(4, "c1", `{"reservation_id": "R1AAAA", "flights": [{"flight_number": "HAT055", "date": "2024-05-02"}], "cabin": "economy"}`),
		call(5, "The flight can be changed at no cost in economy.", "c2", "update_reservation_flights", `{"reservation_id":"R1AAAA","flight":"HAT101"}`),
		result(6, "c2", `{"status": "ok"}`),
		{Seq: 7, Role: "assistant", Text: "Reservation R1AAAA is now on flight HAT101 on 2024-05-03."},
		{Seq: 8, Role: "user", Text: "Now please cancel reservation R2BBBB, it was booked by mistake."},
		call(9, "Checking whether R2BBBB can be refunded.", "c3", "get_reservation_details", `{"reservation_id":"R2BBBB"}`),
		result(10, "c3", `{"reservation_id": "R2BBBB", "insurance": "yes", "created_at": "2024-05-01"}`),
		call(11, "It was booked within a day, so it is refundable.", "c4", "cancel_reservation", `{"reservation_id":"R2BBBB"}`),
		result(12, "c4", `{"status": "cancelled", "refund": 320}`),
		{Seq: 13, Role: "assistant", Text: "Reservation R2BBBB is cancelled; $320 goes back to your card."},
		{Seq: 14, Role: "user", Text: "Next, book me a flight from JFK to SFO on 2024-05-24 in economy."},
		call(15, "Searching the direct flights first.", "c5", "search_direct_flight", `{"origin":"JFK","destination":"SFO","date":"2024-05-24"}`),
		result(16, "c5", `[{"flight_number": "HAT202", "price": 120}, {"flight_number": "HAT311", "price": 180}]`),
		call(17, "HAT202 is the cheapest direct flight at $120.", "c6", "book_reservation", `{"flight":"HAT202","cabin":"economy","origin":"JFK"}`),
		result(18, "c6", `{"reservation_id": "R3CCCC", "status": "ok"}`),
	}
}

// The current task's decisions and work, and the outcome of each finished task.
var (
	currentLines = []string{
		"Searching the direct flights first.",
		"HAT202 is the cheapest direct flight at $120.",
		"search_direct_flight(date=2024-05-24, destination=SFO, origin=JFK)",
		"book_reservation(cabin=economy, flight=HAT202, origin=JFK) -> {\"reservation_id\": \"R3CCCC\", \"status\": \"ok\"}",
	}
	outcomes = []string{
		"Reservation R1AAAA is now on flight HAT101 on 2024-05-03.",
		"Reservation R2BBBB is cancelled; $320 goes back to your card.",
	}
)

// TestFinishedTasksShrinkFirst: with a tight budget, the finished tasks are condensed to their
// outcome line before any line of the current task's goal, decisions or work is dropped.
func TestFinishedTasksShrinkFirst(t *testing.T) {
	msgs := threeTasks()
	full := summarize(t, extractive.Summarizer{}, msgs, 4000).Text
	for _, want := range append(append([]string{"Let me look at the reservation first."}, currentLines...), outcomes...) {
		if !strings.Contains(full, want) {
			t.Fatalf("the summary with room lacks %q:\n%s", want, full)
		}
	}
	tight := summarize(t, extractive.Summarizer{}, msgs, (len(full)+2)/3*2/3)
	if len(tight.Text) >= len(full) {
		t.Fatalf("the tight budget dropped nothing:\n%s", tight.Text)
	}
	for _, want := range currentLines {
		if !strings.Contains(tight.Text, want) {
			t.Errorf("the current task lost %q:\n%s", want, tight.Text)
		}
	}
	for k, want := range outcomes {
		if !strings.Contains(tight.Text, want) {
			t.Errorf("finished task %d lost its outcome %q:\n%s", k+1, want, tight.Text)
		}
	}
	if strings.Contains(tight.Text, "Let me look at the reservation first.") {
		t.Errorf("a finished task's decision is kept while the budget is tight:\n%s", tight.Text)
	}
}

// TestTaskLines: the current task's goal leads its section; the lines of the finished tasks are
// tagged with their task, each with an outcome line under Work done.
func TestTaskLines(t *testing.T) {
	full := summarize(t, extractive.Summarizer{}, threeTasks(), 4000).Text
	for _, want := range []string{
		"## Goal and constraints\n- Goal: Next, book me a flight from JFK to SFO on 2024-05-24 in economy.\n- [task 1] Goal: Please move reservation R1AAAA",
		"- [task 1] Let me look at the reservation first.",
		"- [task 2] get_reservation_details(reservation_id=R2BBBB)",
		"- [task 1] Outcome: " + outcomes[0], "- [task 2] Outcome: " + outcomes[1],
		"\n- Searching the direct flights first.", "\n- search_direct_flight(",
	} {
		if !strings.Contains(full, want) {
			t.Errorf("summary lacks %q:\n%s", want, full)
		}
	}
	if strings.Contains(full, "[task 3]") {
		t.Errorf("the current task is tagged:\n%s", full)
	}
}

// TestFinishedTasksShrinkFirstOverRecompactions: the tasks survive being summarized again: the
// first two tasks, summarized once, are folded into the summary of the third, whose detail is
// kept under a tight budget while the earlier ones keep their outcome line.
func TestFinishedTasksShrinkFirstOverRecompactions(t *testing.T) {
	msgs := threeTasks()
	first := summarize(t, extractive.Summarizer{}, msgs[:12], 4000).Text // tasks 1 and 2, the second current
	next := append([]transcript.Message{{Role: transcript.RoleSummary, Text: first}}, msgs[12:]...)
	full := summarize(t, extractive.Summarizer{}, next, 4000).Text
	for _, want := range []string{"[task 1] Goal: Please move reservation R1AAAA", "[task 2] Goal: Now please cancel", "[task 2] Outcome: Reservation R2BBBB is cancelled"} {
		if !strings.Contains(full, want) {
			t.Fatalf("the re-summarized tasks lack %q:\n%s\n--- from:\n%s", want, full, first)
		}
	}
	tight := summarize(t, extractive.Summarizer{}, next, (len(full)+2)/3*2/3).Text
	for _, want := range append(currentLines, outcomes...) {
		if !strings.Contains(tight, want) {
			t.Errorf("the tight re-summary lost %q:\n%s", want, tight)
		}
	}
}
