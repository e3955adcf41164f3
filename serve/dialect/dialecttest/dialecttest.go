// Package dialecttest holds the checks the tests of every dialect make alike.
package dialecttest

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
)

// ParseAgainst parses next against prev, the previous request of its thread, and checks that it
// reads the turn a parse of next on its own reads (the same messages, parameters, hashes and
// elements) and that same of its messages are prev's. It returns the turns of prev and of next.
func ParseAgainst(t *testing.T, d dialect.Dialect, prev, next []byte, same int) (p, got dialect.Turn) {
	t.Helper()
	p, err := d.Parse(prev, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := d.Parse(next, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = d.Parse(next, p.Sent); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Messages, want.Messages) {
		t.Errorf("messages differ from a parse on its own:\n got %v\nwant %v", got.Messages, want.Messages)
	}
	if !reflect.DeepEqual(got.Params, want.Params) {
		t.Errorf("params %v, want %v", got.Params, want.Params)
	}
	if !reflect.DeepEqual(got.Sent.Hashes, want.Sent.Hashes) || !reflect.DeepEqual(got.Sent.Elem, want.Sent.Elem) {
		t.Errorf("hashes or elements differ from a parse on its own: %v, want %v", got.Sent.Elem, want.Sent.Elem)
	}
	if got.Same != same {
		t.Errorf("%d messages the previous request's, want %d", got.Same, same)
	}
	return p, got
}

// AsSent checks the rule of a turn forwarded as sent (dialect.Turn.SentBody) in dialect d, on
// a request body whose active context is its own messages, as serve stores them (entries seq
// 1, 2, ..., each one's encoding its JSON): with AsSent set, Render writes body itself, the
// same bytes in memory; without it, or with a Notice, or with a member changed, Render writes
// the request anew. The request anew is the same JSON value as body (what forwarding it as
// sent leaves out is nothing).
func AsSent(t *testing.T, d dialect.Dialect, body []byte) {
	t.Helper()
	turn, err := d.Parse(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	entries := make([]memory.Entry, len(turn.Messages))
	enc := make([]json.RawMessage, len(turn.Messages))
	for i, m := range turn.Messages {
		entries[i] = memory.Entry{Seq: int64(i + 1), Message: m, Tokens: 1}
		if enc[i], err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
	}
	render := func(tn dialect.Turn) []byte {
		t.Helper()
		out, err := d.Render(tn, entries, enc)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	as := turn
	as.AsSent = true
	if out := render(as); len(out) != len(body) || &out[0] != &body[0] {
		t.Fatalf("AsSent: Render wrote %d bytes anew, want the request's own %d:\n%s", len(out), len(body), out)
	}
	anew := render(turn)
	if len(anew) > 0 && &anew[0] == &body[0] {
		t.Fatal("not AsSent: Render returned the request's bytes")
	}
	var got, want map[string]any
	if err := json.Unmarshal(anew, &got); err != nil {
		t.Fatalf("Render: %v\n%.300s", err, anew)
	}
	json.Unmarshal(body, &want)
	for k := range maps.Keys(want) {
		if !reflect.DeepEqual(got[k], want[k]) {
			g, _ := json.Marshal(got[k])
			w, _ := json.Marshal(want[k])
			n := 0
			for n < min(len(g), len(w)) && g[n] == w[n] {
				n++
			}
			t.Errorf("Render anew is another request than the one sent: %s differs at byte %d:\n got %.200s\nwant %.200s", k, n, g[max(n-40, 0):], w[max(n-40, 0):])
		}
	}
	if len(got) != len(want) {
		t.Errorf("Render anew wrote %d members, the request has %d", len(got), len(want))
	}
	// A note of serve's, or a member changed: rendered, whatever AsSent says.
	noted := as
	noted.Notice = &chat.Message{Role: chat.RoleSystem, Content: json.RawMessage(`"a note"`)}
	if out := render(noted); &out[0] == &body[0] || !bytes.Contains(out, []byte("a note")) {
		t.Errorf("AsSent with a Notice: want it rendered with the note, got %s", out)
	}
	changed := as
	changed.Fields = maps.Clone(as.Fields)
	changed.Fields["model"] = json.RawMessage(`"another-model"`)
	if out := render(changed); &out[0] == &body[0] || !bytes.Contains(out, []byte("another-model")) {
		t.Errorf("AsSent with a member changed: want it rendered, got %s", out)
	}
}
