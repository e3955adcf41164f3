package serve

import (
	"container/list"
	"context"
	"time"
	"unsafe"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/serve/dialect"
)

// threadState serializes the work on one thread: turn is held by a request for its whole
// turn (reconcile, append, model call, reply), compact by the one compaction of the thread
// that runs at a time. Both are one-slot semaphores, so that waiting can be abandoned.
//
// The server keeps a thread's state while it is in use (users > 0: requests of the thread,
// its background compaction), and after that only while what it keeps (see liveState) fits
// within CacheBytes among the most recently used and the thread was used within CacheIdle.
type threadState struct {
	thread        string
	turn, compact chan struct{}
	bgRunning     bool // a background compaction goroutine owns the thread
	bgAgain       bool // a turn ended while it ran: check once more when it ends

	// users, used and elem are the server's, under its mu.
	users int
	used  time.Time
	elem  *list.Element

	// lv is what the server keeps of the thread between turns (see liveState; read and
	// written only by the holder of turn, through Server.keepLive), liveSize its size.
	lv       *liveState
	liveSize int64

	// sent is the thread's latest request's messages (see Dialect.Parse), sentSize their
	// size, sentMsgs the part of it their messages take (histBytes); under Server.mu.
	sent     *dialect.Sent
	sentSize int64
	sentMsgs int64

	// over is the settings override of the thread's latest turn (see Server.limits), which its
	// background compaction uses too; under Server.mu.
	over compact.ThreadSettings

	// target is what the upstream rung of the summarizer needs of the thread's latest turn
	// (see summaryTarget); under Server.mu.
	target *summaryTarget

	// notice is what the thread's model was told (see Server.notice), as its metadata holds
	// it; nil: not read yet. Under Server.mu.
	notice *noticeState
}

// hold returns the thread's state, made when the server keeps none, and counts the caller
// as its user until drop.
func (s *Server) hold(thread string) *threadState {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropIdle(time.Now().Add(-s.CacheIdle))
	st, ok := s.threads[thread]
	if !ok {
		st = &threadState{thread: thread, turn: make(chan struct{}, 1), compact: make(chan struct{}, 1)}
		st.elem = s.lru.PushFront(st)
		s.threads[thread] = st
	}
	st.users++
	return st
}

// drop ends a use of hold: the state stays cached (the most recently used) when it holds a
// history, and the cache is brought back within CacheBytes.
func (s *Server) drop(st *threadState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.users--
	st.used = time.Now()
	s.lru.MoveToFront(st.elem)
	if st.users == 0 && st.lv == nil {
		s.forget(st) // nothing to reconcile with: what it sent is of no use
	}
	for e := s.lru.Back(); e != nil && s.cached > s.CacheBytes; {
		prev := e.Prev()
		if old := e.Value.(*threadState); old.users == 0 {
			s.forget(old)
		}
		e = prev
	}
}

// dropIdle forgets the unused threads last used before cutoff. The caller holds mu.
func (s *Server) dropIdle(cutoff time.Time) {
	for e := s.lru.Back(); e != nil; {
		prev := e.Prev()
		st := e.Value.(*threadState)
		if st.users == 0 {
			if !st.used.Before(cutoff) {
				return
			}
			s.forget(st)
		}
		e = prev
	}
}

// forget removes an unused thread's state. The caller holds mu.
func (s *Server) forget(st *threadState) {
	s.lru.Remove(st.elem)
	delete(s.threads, st.thread)
	s.cached -= st.liveSize + st.sentSize
	st.lv, st.liveSize, st.sent, st.sentSize, st.sentMsgs = nil, 0, nil, 0, 0
}

// lastSent returns the messages of the thread's latest request, nil when none is kept.
func (s *Server) lastSent(thread string) *dialect.Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.threads[thread]; st != nil {
		return st.sent
	}
	return nil
}

// keepSent keeps a request's messages as the thread's latest (see Dialect.Parse): its first
// same messages are, value for value, those of prev (the request it was parsed against), whose
// bytes are not measured again when prev is the one kept. The caller holds the thread.
func (s *Server) keepSent(st *threadState, sent, prev *dialect.Sent, same int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var msgs int64
	if old := st.sent; old != nil && old == prev && same <= len(old.Msgs) && same <= len(sent.Msgs) {
		msgs = st.sentMsgs - histBytes(old.Msgs[same:]) + histBytes(sent.Msgs[same:])
	} else {
		msgs = histBytes(sent.Msgs)
	}
	size := msgs + int64(len(sent.Hashes))*16 + int64(len(sent.Tools))*256 + sent.Spare()
	if sent.Scan != nil {
		size += sent.Scan.Bytes()
	}
	size += int64(len(sent.Elem))*8 + int64(len(sent.Params))*32
	s.cached += size - st.sentSize
	st.sent, st.sentSize, st.sentMsgs = sent, size, msgs
}

// state returns the state of a thread the caller holds (see hold).
func (s *Server) state(thread string) *threadState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.threads[thread]
}

// histBytes estimates the memory that messages hold: each one's struct (messageBytes) and
// what it points to, rounded up as the allocator does.
func histBytes(msgs []chat.Message) int64 {
	n := int64(0)
	for _, m := range msgs {
		n += messageBytes + alloc(len(m.Role)) + alloc(len(m.Content)) + alloc(len(m.Name)) + alloc(len(m.ToolCallID))
		if m.Extra != nil {
			n += 48
			for k, v := range m.Extra {
				n += 48 + alloc(len(k)) + alloc(len(v))
			}
		}
		for _, c := range m.ToolCalls {
			n += 96 + alloc(len(c.ID)) + alloc(len(c.Type)) + alloc(len(c.Function.Name)) + alloc(len(c.Function.Arguments))
		}
	}
	return n
}

// messageBytes is the size of a chat.Message.
const messageBytes = int64(unsafe.Sizeof(chat.Message{}))

// alloc is the memory an allocation of n bytes takes: n rounded up to 16 (0 for none).
func alloc(n int) int64 {
	if n == 0 {
		return 0
	}
	return int64(n+15) &^ 15
}

// acquire takes a one-slot semaphore, or gives up when ctx ends.
func acquire(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func release(sem chan struct{}) { <-sem }
