package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/english"
	"github.com/memcascade/memcascade/memory"
)

// Notice configures the notes the proxy adds for the agent's model at the end of a request
// (serve.notice in the config; off when Enabled is false):
//
//   - soon: the turn whose active context passes AtRatio of the compaction trigger (the
//     budget times trigger_ratio, where a compaction becomes due) is told, once, that the
//     context will soon be compacted. It is told again only after a turn saw the context back
//     under that mark (a compaction brought it back, or the limit grew): once per crossing.
//   - compacted: the first turn after a compaction is applied is told, once, what it
//     summarized (the messages of its range), how many facts of them were dropped, and that
//     memory_search can look back.
//
// Each note is written by the request's dialect after the conversation (Turn.Notice): never
// stored, so never in the history, an export or the next request's reconcile. Which crossing
// and which compaction a thread was told of is kept in the thread's metadata (NoticeKey), so
// that a restart or another memctl serve on the same store does not tell it again.
type Notice struct {
	Enabled bool
	// AtRatio is the share of the compaction trigger the soon note comes at, in (0, 1]
	// (0: DefaultNoticeRatio).
	AtRatio float64
}

// DefaultNoticeRatio is Notice.AtRatio's default: 80% of the compaction trigger.
const DefaultNoticeRatio = 0.8

// NoticeKey is the member of a thread's metadata (memory.Store.ThreadMeta) that holds what the
// thread's model was told (noticeState).
const NoticeKey = "serve_notice"

// noticeState is what a thread's model was told. Warned: its active context passed the mark
// and it was told so, and no turn has seen the context under the mark since. Compaction: the
// newest compaction it was told of (0: none).
type noticeState struct {
	Warned     bool  `json:"warned"`
	Compaction int64 `json:"compaction"`
}

// NoticePrefix begins every note, so that the model (and a reader of the upstream's logs)
// knows where it comes from.
const NoticePrefix = "[memctl notice: from the proxy that manages this conversation's context, not from the user] "

// noticeMark is the active context's size past which the soon note is due.
func (n Notice) mark(set compact.Settings) int {
	r := n.AtRatio
	if r <= 0 || r > 1 {
		r = DefaultNoticeRatio
	}
	return int(float64(set.Budget()) * set.TriggerRatio * r)
}

// notice returns the note of this turn for the thread's model (nil: none), and records, in the
// thread's metadata, that it was told. lv is the thread's active context as the turn sends it,
// set the turn's settings. A state that cannot be read or written gives no note (logged): a
// note is never given twice for want of the record.
func (s *Server) notice(ctx context.Context, st *threadState, lv *liveState, set compact.Settings) *chat.Message {
	if !s.Notice.Enabled || lv == nil || !lv.ver.Found {
		return nil
	}
	cur, err := s.noticeState(ctx, st)
	if err != nil {
		s.Logger.Warn("notice: the thread's notice state could not be read", "thread", st.thread, "error", err.Error())
		return nil
	}
	next := cur
	var parts []string
	if id := lv.ver.Compaction; id > cur.Compaction {
		rep, err := s.Store.Report(ctx, id)
		if err != nil {
			s.Logger.Warn("notice: the compaction's report could not be read", "thread", st.thread, "id", id, "error", err.Error())
			return nil
		}
		parts = append(parts, compactedNote(rep))
		next.Compaction = id
	}
	mark, tokens := s.Notice.mark(set), lv.active.Tokens
	switch {
	case tokens > mark && !cur.Warned:
		parts = append(parts, soonNote(tokens, int(float64(set.Budget())*set.TriggerRatio)))
		next.Warned = true
	case tokens <= mark && cur.Warned:
		next.Warned = false // back under the mark: the next crossing is told
	}
	if next != cur {
		b, _ := json.Marshal(next) // plain values always marshal
		if err := s.Store.SetThreadMeta(ctx, st.thread, NoticeKey, b); err != nil {
			s.Logger.Warn("notice: the thread's notice state could not be written", "thread", st.thread, "error", err.Error())
			return nil
		}
		s.mu.Lock()
		st.notice = &next
		s.mu.Unlock()
	}
	if len(parts) == 0 {
		return nil
	}
	m := chat.TextMessage(noticeRole(set), NoticePrefix+strings.Join(parts, " "))
	return &m
}

// countNotice is the tokens a note adds to the prompt, as the thread's counter counts a message.
func (s *Server) countNotice(lv *liveState, m *chat.Message) int {
	c, err := s.Store.Counter(lv.active.Thread.Encoding)
	if err != nil {
		return 0
	}
	return c.CountMessage(*m)
}

// noticeState returns what the thread's model was told: kept with the thread's state, read
// from the thread's metadata when none is kept.
func (s *Server) noticeState(ctx context.Context, st *threadState) (noticeState, error) {
	s.mu.Lock()
	kept := st.notice
	s.mu.Unlock()
	if kept != nil {
		return *kept, nil
	}
	raw, err := s.Store.ThreadMeta(ctx, st.thread, NoticeKey)
	if err != nil {
		return noticeState{}, err
	}
	var ns noticeState
	if raw != nil {
		if err := json.Unmarshal(raw, &ns); err != nil {
			return noticeState{}, fmt.Errorf("metadata %s: %v", NoticeKey, err)
		}
	}
	s.mu.Lock()
	st.notice = &ns
	s.mu.Unlock()
	return ns, nil
}

// noticeRole is the role of a note: the summary's (compaction.summary_role), so that an
// upstream that takes no system message after the first (summary_role: user for it) gets
// none from the notes either.
func noticeRole(set compact.Settings) string {
	if set.SummaryRole == chat.RoleUser {
		return chat.RoleUser
	}
	return chat.RoleSystem
}

// soonNote says the context will soon be compacted: tokens of trigger.
func soonNote(tokens, trigger int) string {
	return fmt.Sprintf("The context of this conversation is %d tokens, %d%% of the %d at which it is compacted: "+
		"its older messages will soon be replaced by a summary. Keep in your replies what you still need from them; "+
		"the full history stays stored, and memory_search can look it up after the compaction.",
		tokens, tokens*100/max(trigger, 1), trigger)
}

// compactedNote says what a compaction did: what it summarized (or how it shrank the view),
// the facts it dropped, and that memory_search can look back.
func compactedNote(rep memory.Report) string {
	var b strings.Builder
	switch {
	case rep.FromSeq > 0 && rep.ToSeq >= rep.FromSeq:
		fmt.Fprintf(&b, "The conversation was compacted: messages %d to %d of its history (%s) were replaced by the summary above.",
			rep.FromSeq, rep.ToSeq, english.Count(int(rep.ToSeq-rep.FromSeq+1), "message", "messages"))
	default:
		b.WriteString("The conversation was compacted: some of its older messages are shown shortened.")
	}
	if v := rep.View; v != nil {
		var shown []string
		if n := len(v.Masked); n > 0 {
			shown = append(shown, english.Count(n, "tool result masked", "tool results masked"))
		}
		if n := len(v.Cut); n > 0 {
			shown = append(shown, english.Count(n, "tool result cut", "tool results cut"))
		}
		if n := len(v.Omitted); n > 0 {
			shown = append(shown, english.Count(n, "range of messages left out", "ranges of messages left out"))
		}
		if n := len(v.Cleared); n > 0 {
			shown = append(shown, english.Count(n, "message cleared of its tool inputs or reasoning", "messages cleared of their tool inputs or reasoning"))
		}
		if len(shown) > 0 {
			fmt.Fprintf(&b, " Besides: %s.", strings.Join(shown, ", "))
		}
	}
	if n := len(rep.FactsDropped); n > 0 {
		fmt.Fprintf(&b, " %s of the summarized messages did not fit and %s dropped from the context.",
			english.Count(n, "fact", "facts"), map[bool]string{true: "was", false: "were"}[n == 1])
	} else {
		b.WriteString(" No fact of them was dropped.")
	}
	b.WriteString(" The full history is kept: memory_search looks back at what was summarized.")
	return b.String()
}
