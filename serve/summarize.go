package serve

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/serve/dialect"
)

// UpstreamRungName is the name of the upstream rung (see Server.UpstreamEntry) in the cascade,
// its attempt log and its cooldown.
const UpstreamRungName = "upstream"

// summaryTarget is what the upstream rung needs of a thread's latest turn: its dialect, its
// model, and the headers the dialect's Upstream set for it (the auth: the configured key, or
// the agent's as forwarded). It is held in memory only, with the thread's state, and never
// stored or logged.
type summaryTarget struct {
	d      dialect.Dialect
	model  string
	header http.Header
}

// upstreamRung is the provider of the upstream rung: a cascade.Retargeter whose entry of each
// run is the dialect's Summarizer for the thread of the compaction.
type upstreamRung struct {
	s *Server
	// unknownLogged: the rung was passed over for a thread serve had no request of, and said so.
	unknownLogged atomic.Bool
}

// UpstreamEntry returns the upstream rung of a summarizer cascade: the model serve fronts
// summarizes a thread in the API shape of the thread's latest request, with that request's
// model, and with the key its turns reach the upstream with (serve's configured key, else the
// agent's as forwarded: Anthropic's x-api-key or Authorization, Responses' Authorization;
// held in memory with the thread's state, never stored or logged). memctl serve puts it
// before the offline rung when the config names no cascade. A compaction of a thread serve
// has had no request of since it started (or since it dropped the thread's state) passes the
// rung over, with one log line the first time. Its attempts are priced at UpstreamPrice
// (set it first). Call it before Serve.
func (s *Server) UpstreamEntry() cascade.Entry {
	s.upstreamRung = &upstreamRung{s: s}
	return cascade.Entry{Name: UpstreamRungName, Type: "upstream", BaseURL: UpstreamBase(s.Upstream), Provider: s.upstreamRung,
		Price: s.UpstreamPrice}
}

// Complete is never called: the cascade sends through the entry Retarget returns.
func (r *upstreamRung) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, errors.New("the upstream rung summarizes for a thread only")
}

// Retarget is the entry of the upstream rung for the thread of compaction id: the dialect's
// Summarizer of the thread's latest turn, with its model (and, under token_limit auto, the
// window the upstream reported for it).
func (r *upstreamRung) Retarget(ctx context.Context, id int64, e cascade.Entry) (cascade.Entry, bool) {
	s := r.s
	if id == 0 || s.Upstream == "" {
		return e, false
	}
	rep, err := s.Store.Report(ctx, id)
	if err != nil {
		return e, false
	}
	s.mu.Lock()
	var t *summaryTarget
	if st := s.threads[rep.Thread]; st != nil {
		t = st.target
	}
	s.mu.Unlock()
	if t == nil {
		if r.unknownLogged.CompareAndSwap(false, true) {
			s.Logger.Info("the upstream rung does not summarize a thread serve has had no request of since it started (its API shape and model are its requests'): the next rung does",
				"thread", rep.Thread)
		}
		return e, false
	}
	e.Model = t.model
	e.Provider = t.d.Summarizer(dialect.SummaryUpstream{Name: e.Name, Base: s.Upstream, Model: t.model, Header: t.header, Client: s.Client})
	if s.Windows != nil {
		if w, ok := s.Windows.Cached()[t.model]; ok && !w.Assumed {
			e.ContextWindow = w.Tokens
		}
	}
	return e, true
}

// keepTarget records what the upstream rung needs of turn t of dialect d, read from request r
// (see summaryTarget), when the compactor's cascade has the rung.
func (s *Server) keepTarget(st *threadState, d dialect.Dialect, t dialect.Turn, r *http.Request) {
	if s.upstreamRung == nil {
		return
	}
	up, err := http.NewRequest(http.MethodPost, s.Upstream, nil)
	if err != nil {
		return
	}
	t.Stream = false
	d.Upstream(t, up, r, s.UpstreamKey)
	up.Header.Del("Content-Type")
	up.Header.Del("Accept")
	s.mu.Lock()
	st.target = &summaryTarget{d: d, model: t.Model, header: up.Header}
	s.mu.Unlock()
}

// summarizerText says which cascade writes the summaries of thread ("" for the server's, as
// the index shows it): "upstream (anthropic_messages, model M), then offline", each rung by
// name, the upstream rung with the API shape and model it summarizes the thread with.
func (s *Server) summarizerText(thread string) string {
	if s.Cascade == nil {
		return ""
	}
	var t *summaryTarget
	if thread != "" {
		s.mu.Lock()
		if st := s.threads[thread]; st != nil {
			t = st.target
		}
		s.mu.Unlock()
	}
	out := ""
	for i, e := range s.Cascade.Entries {
		if i > 0 {
			out += ", then "
		}
		out += e.Name
		if _, ok := e.Provider.(*upstreamRung); !ok {
			continue
		}
		switch {
		case t != nil:
			out += " (" + t.d.Name() + ", model " + t.model + ")"
		case thread != "":
			out += " (passed over until the thread's next request: its API shape and model are its requests')"
		default:
			out += " (the model serve fronts, in each thread's API shape, with its model)"
		}
	}
	return out
}
