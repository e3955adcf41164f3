package dialect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// ScanObject accepts exactly the bodies encoding/json takes for an object, and finds the same
// members and messages.
func FuzzScanRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		` { "model" : "m" , "messages" : [ {"role":"user","content":[{"type":"text","text":"a\"b\\c\u00e9\n"}]} , {} ] , "n": -1.5e+3, "x": [true,false,null,{}], "y": {} } `,
		`{"a":1,"a":2}`, `{"\u006dessages":[1,2]}`, `{}`, `[]`, `{"a":01}`, `{"a":1.}`, `{"a":"\x"}`, `{"a":tru}`,
		`{"a":1}x`, `{"a":[1,]}`, `{"a":{"b":1,}}`, `{"a":"` + "\x01" + `"}`, `{"a":-}`, `{"a":1e}`, `{"a":"\u12g4"}`,
		`{"messages":[{"role":"user"}]`, `{"messages":[1],"messages":"x"}`, `{"a":[[[[[]]]]]}`, `{"a":"\/"}`, `{"messages":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return
		}
		members, msgs, err := ScanObject(b, "messages")
		var obj map[string]json.RawMessage
		want := json.Unmarshal(b, &obj) == nil && obj != nil
		if (err == nil) != want {
			t.Fatalf("%q: ScanObject error %v; encoding/json takes it: %v", b, err, want)
		}
		if err != nil {
			return
		}
		if len(members) != len(obj) {
			t.Fatalf("%q: %d members, encoding/json finds %d", b, len(members), len(obj))
		}
		for _, m := range members {
			var a, c any
			json.Unmarshal(m.Val, &a)
			json.Unmarshal(obj[m.Key], &c)
			ab, _ := json.Marshal(a)
			cb, _ := json.Marshal(c)
			if !bytes.Equal(ab, cb) {
				t.Fatalf("%q: member %q is %s, encoding/json reads %s", b, m.Key, m.Val, obj[m.Key])
			}
		}
		var elems []json.RawMessage
		if json.Unmarshal(obj["messages"], &elems) == nil {
			if len(elems) != len(msgs) {
				t.Fatalf("%q: %d messages, encoding/json finds %d", b, len(msgs), len(elems))
			}
			for i := range elems {
				var e bytes.Buffer
				json.Compact(&e, elems[i])
				var g bytes.Buffer
				json.Compact(&g, msgs[i])
				if !bytes.Equal(e.Bytes(), g.Bytes()) {
					t.Fatalf("%q: message %d is %s, encoding/json reads %s", b, i, msgs[i], elems[i])
				}
			}
		} else if msgs != nil {
			t.Fatalf("%q: messages found in a member that is not an array", b)
		}
	})
}

// TestScanObjectAfter: a scan that resumes from the previous request's (with its body, or as
// kept without it) gives what a whole scan gives, for requests that share a prefix with it
// (the next turn, an edit, a truncation, bytes changed anywhere, invalid JSON or UTF-8 after
// the shared part), resumes only when they do, and takes all it can.
func TestScanObjectAfter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	msg := func(i int) string {
		return fmt.Sprintf(`{"role":"user","content":"message %d %s"}`, i, strings.Repeat("x", rng.IntN(40)))
	}
	body := func(n int, tail string) []byte {
		var parts []string
		for i := range n {
			parts = append(parts, msg(i))
		}
		return []byte(`{"model":"m","messages":[` + strings.Join(parts, ",") + `]` + tail + `}`)
	}
	resumed := 0
	for round := range 2000 {
		prevBody := body(1+rng.IntN(30), []string{"", `,"stream":true`, `,"tools":[{"a":1}]`}[rng.IntN(3)])
		prev, _, err := ScanObjectAfter(prevBody, "messages", nil)
		if err != nil {
			t.Fatal(err)
		}
		next := append([]byte(nil), prevBody...)
		switch rng.IntN(6) {
		case 0: // the next turn: two more messages
			next = append(next[:bytes.LastIndexByte(next, ']')], []byte(","+msg(98)+","+msg(99)+`]}`)...)
		case 1: // a byte changed anywhere
			i := rng.IntN(len(next))
			next[i] = "abc{}[],:\" 1\xff"[rng.IntN(13)]
		case 2: // cut anywhere
			next = next[:rng.IntN(len(next))]
		case 3: // bytes inserted anywhere
			i := rng.IntN(len(next))
			next = append(next[:i:i], append([]byte(`,{"role":"user","content":"in"}`), next[i:]...)...)
		case 4: // another member after the array
			next = append(next[:len(next)-1], []byte(`,"temperature":0.5}`)...)
		}
		from := prev
		if round%2 == 1 {
			from = prev.Kept() // as kept between turns: its offsets and hashes, not its body
		}
		sc, shared, err := ScanObjectAfter(next, "messages", from)
		members, elems, werr := ScanObject(next, "messages")
		if (err == nil) != (werr == nil) {
			t.Fatalf("round %d: %q: resumed scan error %v, whole scan %v", round, next, err, werr)
		}
		if err != nil {
			continue
		}
		if shared > 0 {
			resumed++
		}
		if i := bytes.LastIndexByte(prevBody, ']'); bytes.HasPrefix(next, prevBody[:i]) && shared != len(prev.Elems) {
			t.Fatalf("round %d: %d elements taken, want all %d of the previous body it starts with", round, shared, len(prev.Elems))
		}
		if len(sc.Members) != len(members) || len(sc.Elems) != len(elems) {
			t.Fatalf("round %d: %q: %d members %d elements, whole scan %d %d", round, next, len(sc.Members), len(sc.Elems), len(members), len(elems))
		}
		for i, m := range members {
			if sc.Members[i].Key != m.Key || !bytes.Equal(sc.Members[i].Val, m.Val) {
				t.Fatalf("round %d: member %d: %q=%q, whole scan %q=%q", round, i, sc.Members[i].Key, sc.Members[i].Val, m.Key, m.Val)
			}
		}
		for i, e := range elems {
			if !bytes.Equal(sc.Elems[i], e) {
				t.Fatalf("round %d: element %d: %q, whole scan %q", round, i, sc.Elems[i], e)
			}
		}
	}
	if resumed < 500 {
		t.Fatalf("only %d of 2000 scans resumed", resumed)
	}
}

// TestKeptScanTurns: a conversation's requests, each resending the previous one whole plus two
// messages, each scanned from the previous one as kept (its pieces, not its body): each takes
// all the previous one's elements; each kept scan adds one piece, for what its request added,
// until maxSegs pieces are one again; the pieces cover the body up to its last element. A
// request with a byte changed in an early piece is taken up to the element before it, as a
// whole scan reads it.
func TestKeptScanTurns(t *testing.T) {
	var msgs []string
	body := func() []byte {
		return []byte(`{"model":"m","messages":[` + strings.Join(msgs, ",") + `],"stream":true}`)
	}
	msgs = append(msgs, `{"role":"system","content":"be brief"}`)
	var kept *Scanned
	for turn := range 3 * maxSegs {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"question %d"}`, turn), fmt.Sprintf(`{"role":"assistant","content":"answer %d"}`, turn))
		b := body()
		if turn%7 == 6 {
			// An edit in the first message: taken up to nothing before it.
			edited := bytes.Replace(b, []byte("be brief"), []byte("be Brief"), 1)
			sc, shared, err := ScanObjectAfter(edited, "messages", kept)
			if err != nil || shared != 0 || len(sc.Elems) != len(msgs) {
				t.Fatalf("turn %d: an edited first message: %d elements taken, %d read (%v)", turn, shared, len(sc.Elems), err)
			}
			// An edit in the last message the kept scan has: taken up to the one before it.
			last := fmt.Sprintf(`"answer %d"`, turn-1)
			edited = bytes.Replace(b, []byte(last), []byte(`"Answer `+last[8:]), 1)
			if _, shared, err := ScanObjectAfter(edited, "messages", kept); err != nil || shared != len(msgs)-3 {
				t.Fatalf("turn %d: an edited last message: %d elements taken, want %d (%v)", turn, shared, len(msgs)-3, err)
			}
		}
		sc, shared, err := ScanObjectAfter(b, "messages", kept)
		if err != nil {
			t.Fatal(err)
		}
		if want := len(msgs) - 2; kept != nil && shared != want {
			t.Fatalf("turn %d: %d elements taken, want all %d of the previous request", turn, shared, want)
		}
		next := sc.Kept()
		if got, want := len(next.segs), turn%maxSegs+1; got != want {
			t.Fatalf("turn %d: %d pieces kept, want %d", turn, got, want)
		}
		from := 0
		for _, sg := range next.segs {
			if sg.h != HashBytes(b[from:sg.end]) {
				t.Fatalf("turn %d: a piece's hash is not its bytes'", turn)
			}
			from = sg.end
		}
		if from != next.ends[len(next.ends)-1] {
			t.Fatalf("turn %d: the pieces end at %d, the last element at %d", turn, from, next.ends[len(next.ends)-1])
		}
		kept = next
	}
}

// TestScanResumesInPlace: a conversation's requests, each resending the previous one whole plus
// two messages: each scan that resumes after all of the previous one's elements extends its
// offsets and hashes in place (no copy of what is resent); a second scan resumed from the same
// previous one (a retry) copies them, and neither sees the other's elements: each gives what a
// whole scan gives, and the previous scan is unchanged (another request resumes from it).
func TestScanResumesInPlace(t *testing.T) {
	var msgs []string
	body := func(extra ...string) []byte {
		return []byte(`{"model":"m","messages":[` + strings.Join(append(slices.Clone(msgs), extra...), ",") + `]}`)
	}
	check := func(what string, sc *Scanned, b []byte) {
		t.Helper()
		_, elems, err := ScanObject(b, "messages")
		if err != nil || len(sc.Elems) != len(elems) || len(sc.ends) != len(elems) || len(sc.prefix) != len(elems) {
			t.Fatalf("%s: %d elements, %d offsets, whole scan %d (%v)", what, len(sc.Elems), len(sc.ends), len(elems), err)
		}
		h := Hash{}
		for i, e := range elems {
			from := 0
			if i > 0 {
				from = sc.ends[i-1]
			}
			h = chain(h, b[from:sc.ends[i]])
			if !bytes.Equal(b[sc.starts[i]:sc.ends[i]], e) || sc.prefix[i] != h {
				t.Fatalf("%s: element %d: %q at %d:%d, whole scan %q", what, i, b[sc.starts[i]:sc.ends[i]], sc.starts[i], sc.ends[i], e)
			}
		}
	}
	msgs = append(msgs, `{"role":"system","content":"be brief"}`)
	for i := range 99 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"step %d"}`, i))
	}
	first, _, err := ScanObjectAfter(body(), "messages", nil)
	if err != nil {
		t.Fatal(err)
	}
	prev, prevBody, last, inPlace := first.Kept(), body(), first, 0
	for turn := range 40 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"question %d"}`, turn), fmt.Sprintf(`{"role":"assistant","content":"answer %d"}`, turn))
		b := body()
		sc, shared, err := ScanObjectAfter(b, "messages", prev)
		if err != nil || shared != len(msgs)-2 {
			t.Fatalf("turn %d: %d elements taken, want %d (%v)", turn, shared, len(msgs)-2, err)
		}
		check(fmt.Sprintf("turn %d", turn), sc, b)
		if n := len(last.ends) + 2; n <= cap(last.ends) && n <= cap(last.starts) && n <= cap(last.prefix) {
			if &sc.ends[0] != &last.ends[0] || &sc.prefix[0] != &last.prefix[0] || &sc.starts[0] != &last.starts[0] {
				t.Fatalf("turn %d: the offsets are a copy, not the previous scan's extended", turn)
			}
			inPlace++
		}
		// A retry resumed from the same previous scan, with another message: a copy.
		retry := body(`{"role":"user","content":"another"}`)
		rs, _, err := ScanObjectAfter(retry, "messages", prev)
		if err != nil {
			t.Fatal(err)
		}
		if &rs.ends[0] == &first.ends[0] {
			t.Fatalf("turn %d: the retry extended the offsets in place too", turn)
		}
		check(fmt.Sprintf("turn %d, retry", turn), rs, retry)
		check(fmt.Sprintf("turn %d, after the retry", turn), sc, b)
		// The previous scan is as it was: a request that is its body resumes from all of it.
		if again, shared, err := ScanObjectAfter(prevBody, "messages", prev); err != nil || shared != len(msgs)-2 {
			t.Fatalf("turn %d: the previous body again: %d elements taken, want %d (%v)", turn, shared, len(msgs)-2, err)
		} else {
			check(fmt.Sprintf("turn %d, the previous body", turn), again, prevBody)
		}
		prev, prevBody, last = sc.Kept(), b, sc
	}
	if inPlace < 30 {
		t.Fatalf("%d of 40 scans extended the previous one's offsets in place", inPlace)
	}
}

// TestScanBytesCountRoom: the bytes a kept scan is counted for hold its offsets and hashes with
// the room past them, which the next scan resumed after all of its elements fills in place
// (resumeOffsets): a conversation's kept scans, turn after turn, are never counted for less.
func TestScanBytesCountRoom(t *testing.T) {
	var msgs []string
	body := func() []byte { return []byte(`{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`) }
	for i := range 1000 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"step %d"}`, i))
	}
	var prev *Scanned
	for turn := range 30 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"question %d"}`, turn), fmt.Sprintf(`{"role":"assistant","content":"answer %d"}`, turn))
		sc, _, err := ScanObjectAfter(body(), "messages", prev)
		if err != nil {
			t.Fatal(err)
		}
		prev = sc.Kept()
		held := int64(cap(prev.starts))*8 + int64(cap(prev.ends))*8 + int64(cap(prev.prefix))*16 + int64(cap(prev.all))*64 + int64(cap(prev.segs))*24
		if got := prev.Bytes(); got < held {
			t.Fatalf("turn %d: a kept scan of %d elements counted for %d bytes; its offsets and hashes hold %d", turn, len(prev.ends), got, held)
		}
	}
}
