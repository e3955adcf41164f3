package eval_test

import (
	"context"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/eval"
	"github.com/memcascade/memcascade/facts"
)

// summary is a compaction's summary as the offline summarizer writes it: tool calls with
// their arguments, a user's words quoted, and the key facts as bare lists.
const summary = `Summary of the earlier conversation (messages 2 to 40; the originals are kept in history):

## Goal and constraints
- Goal: Hi, I need to change my flight to a later date.
- The user: "Please use the card ending in 7788 and never the gift card"

## Work done
- Tool calls:
  - get_user_details(user_id=mia_li_3668) -> ok
  - get_reservation_details(reservation_id=ZFA04Y) -> ok
  - search_direct_flight(origin=JFK, destination=SEA, date=2024-05-20) -> ok

## Key facts
- IDs: HAT136; HAT039; ZFA04Y; mia_li_3668; credit_card_4421486
- Dates: 1990-04-05; 2024-05-20; 2024-05-21
- Amounts: $1,286; 412; 95`

func ask(t *testing.T, ctx []chat.Message, q eval.Question) string {
	t.Helper()
	got, err := eval.Lookup{}.Answer(context.Background(), ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestLookupReadsSummary: the message a recall probe quotes was compacted away; the value is
// in the summary, next to the probe's cue words in another form (user_id=...), and the lookup
// finds it there. (It used to answer nothing: it read no value of a system message, and
// took user_id for one word.)
func TestLookupReadsSummary(t *testing.T) {
	ctx := []chat.Message{chat.TextMessage(chat.RoleSystem, summary), chat.TextMessage(chat.RoleUser, "Yes, go ahead.")}
	for _, c := range []struct {
		q    eval.Question
		want string
	}{
		{eval.Question{Kind: eval.KindRecall, Want: facts.KindID, Role: chat.RoleUser,
			Begins: "Sure, my user id is", After: "my user id is"}, "mia_li_3668"},
		{eval.Question{Kind: eval.KindRecall, Want: facts.KindID, Role: chat.RoleTool,
			Begins: `{"reservation_id":`, After: "reservation_id"}, "ZFA04Y"},
		{eval.Question{Kind: eval.KindRecall, Want: facts.KindDate, Role: chat.RoleUser,
			Begins: "I fly from JFK to SEA on", After: "JFK to SEA on"}, "2024-05-20"},
	} {
		c.q.Text = "What is the " + string(c.q.Want) + " the " + c.q.Role + " gave in the message that begins '" + c.q.Begins + "', right after '" + c.q.After + "'?"
		if got := ask(t, ctx, c.q); !eval.Match(c.want, got) {
			t.Errorf("%s: answer %q, want %q", c.q.Text, got, c.want)
		}
	}
}

// TestLookupNoGuess: a value a summary keeps only in a bare list, or not at all, is not
// answered: no cue word stands next to it, and a value the question quotes is not an answer.
func TestLookupNoGuess(t *testing.T) {
	ctx := []chat.Message{chat.TextMessage(chat.RoleSystem, summary)}
	for _, c := range []struct {
		q      eval.Question
		absent string // the expected value, not in the context at all ("": in a bare list)
	}{
		// The flight number the reservation held: only in the IDs list.
		{eval.Question{Kind: eval.KindRecall, Want: facts.KindID, Role: chat.RoleTool,
			Begins: `{"reservation_id": "ZFA04Y", "flights": [{"origin": "JFK",`, After: "SEA flight_number"}, ""},
		// The passenger's birth date: only in the Dates list.
		{eval.Question{Kind: eval.KindRecall, Want: facts.KindDate, Role: chat.RoleTool,
			Begins: `{"name": {"first_name": "Mia"`, After: "Li dob"}, ""},
		// The email: in no form anywhere in the context.
		{eval.Question{Kind: eval.KindRecall, Want: facts.KindEmail, Role: chat.RoleTool,
			Begins: `{"name": {"first_name": "Mia"`, After: "94110 email"}, "mia.li3175@example.com"},
		// The reservation after ZFA04Y in the user's list: the question quotes ZFA04Y, which is
		// next to reservation_id in the summary, and is not the answer.
		{eval.Question{Kind: eval.KindRecall, Want: facts.KindID, Role: chat.RoleTool,
			Begins: `{"name": {"first_name": "Mia"`, After: "reservation ZFA04Y"}, "NQNU5R"},
	} {
		c.q.Kind = eval.KindRecall
		c.q.Text = "What is the " + string(c.q.Want) + " the " + c.q.Role + " gave in the message that begins '" + c.q.Begins + "', right after '" + c.q.After + "'?"
		got := ask(t, ctx, c.q)
		if got != "" {
			t.Errorf("%s: answer %q, want none", c.q.Text, got)
		}
		if c.absent != "" && eval.Match(c.absent, got) {
			t.Errorf("%s: answered the absent %q", c.q.Text, c.absent)
		}
	}
}
