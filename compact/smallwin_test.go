package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// Small windows over a life (issue 37, item 7): a thread lived turn by turn at 4,096 and 8,192
// tokens through the offline rung compacts at most ceil(appended / (0.25 × limit)) + 2 times,
// loses no fact no report names, and after every compaction every write action appended so
// far is on one line of the active context with the id it acted on (its reservation or user).

// writeAction is a tool call that changes state, with the id it acted on.
type writeAction struct {
	name, key string
}

// writeKeys are the arguments that name what an action acted on, most specific first.
var writeKeys = []string{"reservation_id", "user_id", "order_id", "id"}

// writeActions returns the write actions of msgs: tool calls that are not lookups and carry a
// key argument (writeKeys).
func writeActions(msgs []chat.Message) []writeAction {
	var out []writeAction
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			if facts.IsLookup(tc.Function.Name) {
				continue
			}
			var args map[string]any
			if json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil {
				continue
			}
			for _, k := range writeKeys {
				if v, ok := args[k].(string); ok && v != "" {
					out = append(out, writeAction{tc.Function.Name, v})
					break
				}
			}
		}
	}
	return out
}

// missingWrites returns the write actions no line of text holds with their key.
func missingWrites(ws []writeAction, text string) []writeAction {
	lines := strings.Split(strings.ToLower(text), "\n")
	var out []writeAction
	for _, w := range ws {
		name, key := strings.ToLower(w.name), strings.ToLower(w.key)
		found := false
		for _, l := range lines {
			if strings.Contains(l, name) && strings.Contains(l, key) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, w)
		}
	}
	return out
}

// smallLifeStats is what smallLife saw.
type smallLifeStats struct {
	turns, compactions, appended int
	writes                       int      // write actions appended
	writesOff                    int      // checkpoints × write actions not on one line with their key
	firstOff                     string   // the first such
	lost                         []string // facts lost unnamed at the first checkpoint that lost any
}

// bound is ceil(appended / (0.25 × limit)) + 2.
func (st smallLifeStats) bound(limit int) int {
	q := limit / 4
	return (st.appended+q-1)/q + 2
}

// smallLife appends turns to a new thread one at a time, compacting whenever ShouldCompact
// says so through the offline rung, and checks after every compaction the facts and the write
// actions appended so far.
func smallLife(t *testing.T, turns [][]chat.Message, limit int) smallLifeStats {
	t.Helper()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: limit})
	counter, err := s.Counter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	var st smallLifeStats
	var sent []chat.Message
	for i, u := range turns {
		if _, err := s.Append(ctx, "t", u, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, u...)
		st.turns++
		for _, m := range u {
			st.appended += counter.CountMessage(m)
		}
		due, err := c.ShouldCompact(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if !due {
			continue
		}
		rep, _ := c.Compact(ctx, "t", compact.Options{})
		if rep.Status == compact.StatusNotNeeded {
			continue
		}
		st.compactions++
		original, err := lifesim.OriginalFacts(ctx, s, "t")
		if err != nil {
			t.Fatal(err)
		}
		lost, err := lifesim.Losses(ctx, s, "t", original)
		if err != nil {
			t.Fatal(err)
		}
		if len(lost) > 0 && st.lost == nil {
			for _, f := range lost {
				st.lost = append(st.lost, f.Text)
			}
		}
		a, err := s.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		off := missingWrites(writeActions(sent), lifesim.ActiveText(a))
		st.writesOff += len(off)
		if len(off) > 0 && st.firstOff == "" {
			st.firstOff = fmt.Sprintf("after turn %d (compaction %d, %s): %d of %d, first %s on %s", i+1, st.compactions, rep.Status, len(off), len(writeActions(sent)), off[0].name, off[0].key)
		}
	}
	st.writes = len(writeActions(sent))
	return st
}

// airlineThread is a tau-bench-like airline thread of the given tasks: a policy, a user who
// gives an id, lookups with long results, and a write action per task (book, cancel, change
// flights, baggage, passengers, a certificate) whose arguments carry the reservation or user
// it acts on, some of them refused, each followed by a reply.
func airlineThread(seed uint64, tasks int) []chat.Message {
	rng := rand.New(rand.NewPCG(seed, 37))
	policy := "# Airline Agent Policy\n\nThe current time is 2024-05-15 15:00:00 EST. " +
		strings.Repeat("Before taking any action that updates the booking database (booking, modifying flights, editing baggage, upgrading cabin class, or updating passenger information), you must list the action details and obtain explicit user confirmation (yes) to proceed. ", 3)
	msgs := []chat.Message{chat.TextMessage("system", policy)}
	n := 0
	call := func(name string, args map[string]any) (chat.Message, string) {
		n++
		id := fmt.Sprintf("call_%d_%d", seed, n)
		raw, _ := json.Marshal(args)
		m := chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: id, Type: "function", Function: chat.FunctionCall{Name: name, Arguments: string(raw)}}}}
		return m, id
	}
	result := func(id, text string) chat.Message {
		m := chat.TextMessage("tool", text)
		m.ToolCallID = id
		return m
	}
	first := []string{"Mia", "Omar", "James", "Aarav", "Sofia", "Lucas", "Yara", "Noah"}
	last := []string{"Li", "Davis", "Lee", "Patel", "Garcia", "Kim", "Rossi", "Brown"}
	airports := []string{"JFK", "LAX", "ATL", "SFO", "ORD", "DFW", "SEA", "MIA", "BOS", "DEN"}
	resID := func() string {
		const letters = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
		var b [6]byte
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return string(b[:])
	}
	for k := range tasks {
		f, l := first[rng.IntN(len(first))], last[rng.IntN(len(last))]
		user := fmt.Sprintf("%s_%s_%d", strings.ToLower(f), strings.ToLower(l), 1000+rng.IntN(9000))
		res := []string{resID(), resID(), resID()}
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("Hi, I'm %s %s, user id %s. I need help with my reservation %s.", f, l, user, res[0])))
		m, id := call("get_user_details", map[string]any{"user_id": user})
		pay := fmt.Sprintf("credit_card_%d", 1000000+rng.IntN(9000000))
		gift := fmt.Sprintf("gift_card_%d", 1000000+rng.IntN(9000000))
		msgs = append(msgs, m, result(id, fmt.Sprintf(`{"name": {"first_name": "%s", "last_name": "%s"}, "address": {"address1": "%d Spruce Street", "city": "Denver", "state": "CO", "zip": "%05d"}, "email": "%s@example.com", "dob": "19%02d-%02d-%02d", "payment_methods": {"%s": {"source": "credit_card", "brand": "visa", "last_four": "%04d", "id": "%s"}, "%s": {"source": "gift_card", "amount": %d, "id": "%s"}}, "saved_passengers": [{"first_name": "Ana", "last_name": "%s", "dob": "1990-0%d-1%d"}], "membership": "gold", "reservations": ["%s", "%s", "%s"]}`,
			f, l, 100+rng.IntN(900), rng.IntN(99999), user, 50+rng.IntN(49), 1+rng.IntN(12), 1+rng.IntN(28), pay, rng.IntN(9999), pay, gift, 50+rng.IntN(300), gift, l, 1+rng.IntN(9), rng.IntN(9), res[0], res[1], res[2])))
		o, d := airports[rng.IntN(len(airports))], airports[rng.IntN(len(airports))]
		fl := fmt.Sprintf("HAT%03d", rng.IntN(300))
		day := fmt.Sprintf("2024-05-%02d", 16+rng.IntN(14))
		m, id = call("get_reservation_details", map[string]any{"reservation_id": res[0]})
		msgs = append(msgs, m, result(id, fmt.Sprintf(`{"reservation_id": "%s", "user_id": "%s", "origin": "%s", "destination": "%s", "flight_type": "one_way", "cabin": "economy", "flights": [{"origin": "%s", "destination": "%s", "flight_number": "%s", "date": "%s", "price": %d}], "passengers": [{"first_name": "%s", "last_name": "%s", "dob": "1985-03-12"}], "payment_history": [{"payment_id": "%s", "amount": %d}], "created_at": "2024-05-0%dT10:00:00", "total_baggages": 1, "nonfree_baggages": 0, "insurance": "no"}`,
			res[0], user, o, d, o, d, fl, day, 100+rng.IntN(900), f, l, pay, 100+rng.IntN(900), 1+rng.IntN(9))))
		msgs = append(msgs, chat.TextMessage("assistant", fmt.Sprintf("I found reservation %s from %s to %s on %s (flight %s). Before I make any change, please confirm the details: shall I proceed?", res[0], o, d, day, fl)),
			chat.TextMessage("user", "Yes, please proceed."))
		var name string
		var args map[string]any
		switch k % 6 {
		case 0:
			name, args = "book_reservation", map[string]any{"user_id": user, "origin": o, "destination": d, "flight_type": "one_way", "cabin": "economy",
				"flights": []any{map[string]any{"flight_number": fl, "date": day}}, "passengers": []any{map[string]any{"first_name": f, "last_name": l, "dob": "1985-03-12"}},
				"payment_methods": []any{map[string]any{"payment_id": gift, "amount": 100 + rng.IntN(300)}}, "total_baggages": 1, "nonfree_baggages": 0, "insurance": "no"}
		case 1:
			name, args = "cancel_reservation", map[string]any{"reservation_id": res[0]}
		case 2:
			name, args = "update_reservation_flights", map[string]any{"reservation_id": res[0], "cabin": "business", "flights": []any{map[string]any{"flight_number": fl, "date": day}}, "payment_id": pay}
		case 3:
			name, args = "update_reservation_baggages", map[string]any{"reservation_id": res[0], "total_baggages": 2 + rng.IntN(3), "nonfree_baggages": 1, "payment_id": gift}
		case 4:
			name, args = "update_reservation_passengers", map[string]any{"reservation_id": res[0], "passengers": []any{map[string]any{"first_name": "Ana", "last_name": l, "dob": "1990-04-12"}}}
		default:
			name, args = "send_certificate", map[string]any{"user_id": user, "amount": 50 + 50*rng.IntN(4)}
		}
		m, id = call(name, args)
		out := fmt.Sprintf(`{"reservation_id": "%s", "user_id": "%s", "status": "ok", "cabin": "economy", "payment_history": [{"payment_id": "%s", "amount": %d}]}`, res[0], user, gift, 100+rng.IntN(900))
		reply := fmt.Sprintf("Done: %s for %s went through.", strings.ReplaceAll(name, "_", " "), res[0])
		if rng.IntN(5) == 0 {
			out = "Error: the payment method does not have enough balance"
			reply = fmt.Sprintf("I could not complete that for %s: the payment method does not have enough balance.", res[0])
		}
		msgs = append(msgs, m, result(id, out), chat.TextMessage("assistant", reply))
	}
	return msgs
}

// smallLives are the threads the small-window life replays: the recorded ones and generated
// airline threads with many write actions.
func smallLives(t *testing.T) map[string][]chat.Message {
	lives := map[string][]chat.Message{
		"airline-gen1": airlineThread(1, 25),
		"airline-gen2": airlineThread(2, 50),
		"airline-gen3": airlineThread(3, 12),
	}
	for _, f := range corpus.Conversations(t) {
		lives[filepath.Base(f)] = corpus.ReadMessagesFile(t, f)
	}
	return lives
}

// TestSmallLifeHolds: every recorded thread and generated airline threads lived turn by turn
// at 4,096 and 8,192 tokens compact within ceil(appended / (0.25 × limit)) + 2, lose no fact no
// report names, and keep every write action on one line with its key after every compaction.
func TestSmallLifeHolds(t *testing.T) {
	t.Parallel()
	for name, msgs := range smallLives(t) {
		for _, limit := range []int{4096, 8192} {
			t.Run(fmt.Sprintf("%s/%d", name, limit), func(t *testing.T) {
				t.Parallel() // a store of its own
				st := smallLife(t, units(msgs), limit)
				t.Logf("SMALLLIFE %-55s %5d: turns %3d, appended %6d, compactions %3d (bound %3d), writes %3d, off-line at checkpoints %3d, lost %d",
					name, limit, st.turns, st.appended, st.compactions, st.bound(limit), st.writes, st.writesOff, len(st.lost))
				if st.compactions > st.bound(limit) {
					t.Errorf("%d compactions for %d appended tokens, over the bound %d", st.compactions, st.appended, st.bound(limit))
				}
				if len(st.lost) > 0 {
					t.Errorf("facts lost, no report names them: %q", st.lost)
				}
				if st.writesOff > 0 {
					t.Errorf("write actions not on one line with their key: %d over the checkpoints; %s", st.writesOff, st.firstOff)
				}
			})
		}
	}
}
