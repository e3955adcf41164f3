package serve

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"unsafe"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/grow"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
	"github.com/memcascade/memcascade/tokencount"
)

// liveState is what the proxy keeps of a thread between its turns: the history to reconcile
// the next request with, the active context to send the model, with the encoding of each of
// its messages (the upstream body is written from them), and the version of the thread they
// are of (memory.Version). A turn does work in proportion to its new messages: it appends
// them and the reply to what is kept, and never reads the thread again while its version
// stays the one kept.
//
// The version is checked by the append of the request's new messages, in its transaction
// (a live memory.Store.Append: a thread another process changed meanwhile is not appended to; it is
// read again and the request reconciled with what it is now), and by one query before a turn
// that appends nothing and before each compaction decision. A compaction, a pin, new settings
// or an append by another process (memctl compact, another memctl serve) are seen at the
// next turn.
type liveState struct {
	ver    memory.Version
	hist   []chat.Message
	active memory.Active
	ts     compact.ThreadSettings // the thread's stored settings, active.Thread.Settings parsed
	enc    []json.RawMessage      // the encoding of each message of active, in order
	size   int64                  // the bytes it holds, as liveBytes counts
	recall bool                   // hist holds the proxy's recall turns

	// The first known messages of the request knownSent are the first known of hist, one for
	// one (sameMessage): a request whose first messages are those of knownSent byte for
	// byte is compared with hist from there on only (see resent).
	known     int
	knownSent *dialect.Sent
	// whole: the active context is the history, whole and in order, every message as stored
	// (none compacted, masked, superseded or left out).
	whole bool
}

// asSent reports whether the active context is the request's messages, one for one and in
// order: the request's messages are the whole history (knownSent recorded them so: the kept
// request is this one, its hashes the same slice, and nothing was appended since), and the
// active context is the history, whole. (The kept request is a copy of the request's Sent
// without its body: a reference to the request itself would keep its body.)
func (lv *liveState) asSent(req dialect.Turn) bool {
	ks := lv.knownSent
	return lv.whole && req.Sent != nil && ks != nil && len(ks.Hashes) > 0 && len(ks.Hashes) == len(req.Sent.Hashes) &&
		&ks.Hashes[0] == &req.Sent.Hashes[0] && lv.known == len(req.Messages) && len(lv.hist) == len(req.Messages)
}

// plainFrom reports whether entries are messages of the history as stored, in order, the
// first of them the history's message from+1 (none a summary, masked or superseded).
func plainFrom(entries []memory.Entry, from int) bool {
	for i, e := range entries {
		if e.CompactionID != 0 || e.Mark() != nil || e.Superseded || e.Seq != int64(from+i+1) {
			return false
		}
	}
	return true
}

// resent returns the new messages of a request that resends the thread's whole history
// (what OpenAI's SDKs do): the history is a prefix of it, one for one. What the previous
// request sent with the same bytes is known to be the history's, so only the messages after
// it (the reply, and what the thread holds since) are compared. fast is false when that does
// not show the history a prefix of the request: Reconcile decides. When it is true, the
// answer is Reconcile's (its first case: the whole history, then new messages).
func (lv *liveState) resent(req dialect.Turn) (fresh []chat.Message, fast bool) {
	h, r := lv.hist, req.Messages
	if lv.recall || req.Prev == nil || req.Prev != lv.knownSent || len(r) < len(h) || leadingSystem(h) == len(h) {
		return nil, false
	}
	for i := min(req.Same, lv.known); i < len(h); i++ {
		if !sameMessage(r[i], h[i]) {
			return nil, false
		}
	}
	return r[len(h):], true
}

// liveBytes estimates the memory a liveState holds: the history's messages, the active
// context's entries (whose messages share the history's) and their encodings.
func liveBytes(lv *liveState) int64 {
	n := histBytes(lv.hist) + int64(len(lv.active.Entries))*entryBytes
	for _, e := range lv.enc {
		n += 24 + alloc(len(e))
	}
	return n
}

// entryBytes is the size of a memory.Entry.
const entryBytes = int64(unsafe.Sizeof(memory.Entry{}))

// live returns the thread's kept state, read anew when none is kept or, with check, when the
// thread's version is not the one kept (a version that differs only in settings updates
// them). Its version is read first: a thread not made yet is known so by it alone. The caller
// holds the thread's turn.
func (s *Server) live(ctx context.Context, st *threadState, check bool) (*liveState, error) {
	lv := st.lv
	if lv != nil && !check {
		return lv, nil
	}
	// The version first, one query: a thread kept whose context is the same is kept, and a
	// thread none is kept of and that is not made yet (a new thread's first turn) is kept as
	// such, without a read transaction.
	v, err := s.Store.Version(ctx, st.thread)
	if err != nil {
		return nil, err
	}
	switch {
	case lv == nil && !v.Found:
		return s.keepRead(st, memory.Active{}, nil)
	case lv != nil && v.SameContext(lv.ver):
		if v.Settings != lv.ver.Settings {
			ts, err := compact.ParseThreadSettings(st.thread, []byte(v.Settings))
			if err != nil {
				return nil, err
			}
			lv.ver.Settings, lv.active.Thread.Settings, lv.ts = v.Settings, json.RawMessage(v.Settings), ts
		}
		return lv, nil
	}
	a, err := s.Store.Active(ctx, st.thread, memory.ReadOptions{Live: true})
	if errors.Is(err, memory.ErrThreadNotFound) {
		a, err = memory.Active{}, nil // not made yet: kept as a version with Found false
	}
	if err != nil {
		return nil, err
	}
	return s.keepRead(st, a, nil)
}

// keepRead makes the thread as read live (a: ReadOptions.Live) its kept state. enc, when set,
// is the encoding of each of a's entries (an append's Raw); else they are encoded here.
func (s *Server) keepRead(st *threadState, a memory.Active, enc []json.RawMessage) (*liveState, error) {
	active := a
	active.Version, active.History = memory.Version{}, nil // kept as ver and hist, which grow apart from it
	lv := &liveState{ver: a.Version, hist: a.History, active: active, enc: make([]json.RawMessage, len(a.Entries)),
		recall: slices.ContainsFunc(a.History, IsRecall)}
	lv.whole = len(a.Entries) == len(a.History) && plainFrom(a.Entries, 0)
	var err error
	if lv.ts, err = compact.ParseThreadSettings(st.thread, a.Thread.Settings); err != nil {
		return nil, err
	}
	if len(enc) == len(a.Entries) {
		copy(lv.enc, enc)
	} else {
		for i, e := range a.Entries {
			var err error
			if lv.enc[i], err = json.Marshal(e.Message); err != nil {
				return nil, err
			}
		}
	}
	s.keepLive(st, lv)
	s.mu.Lock()
	st.notice = nil // the thread changed: what its model was told is read again when needed
	s.mu.Unlock()
	return lv, nil
}

// keepLive makes lv the thread's kept state (nil: none). The caller holds the thread's turn.
func (s *Server) keepLive(st *threadState, lv *liveState) {
	size := int64(0)
	if lv != nil {
		if lv.size == 0 {
			lv.size = liveBytes(lv)
		}
		size = lv.size
	}
	s.mu.Lock()
	s.cached += size - st.liveSize
	st.lv, st.liveSize = lv, size
	s.mu.Unlock()
}

// appended follows an append of msgs made by this server: the kept state is extended when the
// thread was, before the append, the version kept; else it is dropped (read again when next
// needed). The caller holds the thread's turn.
func (s *Server) appended(st *threadState, msgs []chat.Message, ap memory.AppendResult) {
	lv := st.lv
	if lv == nil || !ap.Before.SameContext(lv.ver) || lv.ver.Found && len(lv.hist) != int(ap.Before.LastSeq) {
		s.keepLive(st, nil)
		return
	}
	next := &liveState{ver: ap.After, hist: grow.Append(lv.hist, msgs...), active: extend(lv.active, ap.Entries), enc: grow.Append(lv.enc, ap.Raw...),
		recall: lv.recall || slices.ContainsFunc(msgs, IsRecall), known: lv.known, knownSent: lv.knownSent, ts: lv.ts}
	next.whole = lv.whole && len(next.active.Entries) == len(next.hist) && plainFrom(ap.Entries, len(lv.active.Entries))
	// Its size is the kept one's and what the append adds (as liveBytes counts), not measured
	// again: a turn does work in proportion to its new messages.
	next.size = lv.size + histBytes(msgs) + int64(len(ap.Entries))*entryBytes
	for _, e := range ap.Raw {
		next.size += 24 + alloc(len(e))
	}
	if ap.After.Settings != lv.ver.Settings || !lv.ver.Found {
		ts, err := compact.ParseThreadSettings(st.thread, []byte(ap.After.Settings))
		if err != nil {
			s.keepLive(st, nil)
			return
		}
		next.active.Thread.Settings, next.ts = json.RawMessage(ap.After.Settings), ts
	}
	if !lv.ver.Found {
		// A new thread: kept as the append reports it, with its model and encoding (read
		// again otherwise, by the turn's next step), each message encoded as stored.
		if ap.Read == nil || ap.Read.Version != ap.After {
			s.keepLive(st, nil)
		} else if _, err := s.keepRead(st, *ap.Read, ap.Raw); err != nil {
			s.keepLive(st, nil)
		} else if ap.Created {
			// Its metadata is none: its model was told nothing yet (see noticeState).
			s.mu.Lock()
			st.notice = &noticeState{}
			s.mu.Unlock()
		}
		return
	}
	s.keepLive(st, next)
}

// appendLive appends msgs to the thread the caller holds the turn of, as a live
// memory.Store.Append does (expect: memory.AppendOptions.Expect), and follows it in the kept
// state.
func (s *Server) appendLive(ctx context.Context, st *threadState, msgs []chat.Message, opt memory.AppendOptions, expect *memory.Version) (memory.AppendResult, error) {
	opt.Live, opt.Expect = true, expect
	ap, err := s.Store.Append(ctx, st.thread, msgs, opt)
	if err != nil {
		if errors.Is(err, memory.ErrStale) {
			s.keepLive(st, nil)
		}
		return ap, err
	}
	s.appended(st, msgs, ap)
	return ap, nil
}

// extend returns the active context a followed by entries, the entries of an append
// (memory.AppendResult.Entries): an append adds its messages at the end of the active context and changes
// nothing before them. The thread's counts follow.
func extend(a memory.Active, entries []memory.Entry) memory.Active {
	if len(entries) == 0 {
		return a
	}
	if len(a.Entries) == 0 {
		a.Tokens += tokencount.ReplyPriming
	}
	a.Entries = grow.Append(a.Entries, entries...)
	for _, e := range entries {
		a.Tokens += e.Tokens
	}
	a.Thread.Messages = int(entries[len(entries)-1].Seq)
	a.Thread.ActiveMessages, a.Thread.ActiveTokens = len(a.Entries), a.Tokens
	return a
}
