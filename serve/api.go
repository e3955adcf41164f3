package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
)

// ThreadView is a thread as `memctl threads --json` lists it: with its effective token_limit
// and strategy (the thread's settings, else the config's), and where the limit comes from
// (TokenLimitFrom, see LimitFrom).
type ThreadView struct {
	memory.Thread
	TokenLimit     int    `json:"token_limit"`
	TokenLimitFrom string `json:"token_limit_from"`
	Strategy       string `json:"strategy"`
	// Held: the breaker holds the thread after failed compactions in a row (compact.Held);
	// memctl threads sets it.
	Held bool `json:"held,omitempty"`
	// Window is the window serve learned for the thread (its settings' window), for the page;
	// the JSON has it in settings.
	Window *compact.Window `json:"-"`
}

// Origins of a thread's limit.
const (
	LimitFromThread   = "thread"   // memctl set --limit
	LimitFromConfig   = "config"   // compaction.token_limit, or its default
	LimitFromUpstream = "upstream" // token_limit auto: the window memctl serve read (settings.window)
)

// LimitFrom returns a thread's limit and where it comes from: the thread's own, else the
// window recorded by memctl serve when token_limit is auto (unless it is out of range: the
// thread's next turn drops it), else the config's (cfg).
func LimitFrom(t memory.Thread, cfg compact.Settings, auto bool) (int, string) {
	ts, _ := compact.ParseThreadSettings(t.ID, t.Settings) // unreadable settings: the config's
	switch {
	case ts.TokenLimit != nil:
		return *ts.TokenLimit, LimitFromThread
	case auto && ts.Window != nil && windowProblem(ts.Window) == "":
		return ts.Window.Limit, LimitFromUpstream
	}
	// The thread sets no token_limit: the config's, or the default.
	return cfg.WithDefaults().TokenLimit, LimitFromConfig
}

// view is a thread as the API and the pages show it. Its strategy is that of the settings a
// compaction of it uses (compact.Resolve); "" when the thread's settings do not resolve with
// the config's (a compaction then fails, naming the setting at fault).
func (s *Server) view(ctx context.Context, t memory.Thread) (ThreadView, error) {
	limit, from := LimitFrom(t, s.Compactor.Settings, s.Windows != nil)
	v := ThreadView{Thread: t, TokenLimit: limit, TokenLimitFrom: from}
	ts, err := compact.ParseThreadSettings(t.ID, t.Settings)
	v.Window = ts.Window
	over := compact.ThreadSettings{}
	if from == LimitFromUpstream { // compacted in the window serve read
		over = compact.LimitOverride(s.Compactor.Settings, ts, limit)
	}
	if set, rerr := compact.Resolve(s.Compactor.Settings, ts, over); err == nil && rerr == nil {
		v.Strategy = set.Strategy
		why, herr := compact.Held(ctx, s.Store, t, set)
		if herr != nil {
			return v, herr
		}
		v.Held = why != ""
	}
	return v, nil
}

// threadParam returns the thread id of the path, or writes a 400. Inspection accepts any id a
// thread may have (memctl import takes any non-empty id), not only those the proxy creates.
func threadParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if memory.ValidThreadID(id) != nil {
		writeCode(w, memory.CodeInvalid, "invalid_thread_id",
			"the thread id must be 1 to 1024 bytes of UTF-8 without NUL", "")
		return "", false
	}
	return id, true
}

// GET /api/threads: memctl threads --json.
func (s *Server) apiThreads(w http.ResponseWriter, r *http.Request) {
	views, err := s.threadViews(r.Context())
	if err != nil {
		Error(w, err)
		return
	}
	writeJSON(w, http.StatusOK, views)
}

// threadViews is every thread as the API and the page show it.
func (s *Server) threadViews(ctx context.Context) ([]ThreadView, error) {
	ts, err := s.Store.Threads(ctx)
	if err != nil {
		return nil, err
	}
	views := make([]ThreadView, len(ts))
	for i, t := range ts {
		if views[i], err = s.view(ctx, t); err != nil {
			return nil, err
		}
	}
	return views, nil
}

// GET /api/threads/{id}: one thread, as an entry of memctl threads --json.
func (s *Server) apiThread(w http.ResponseWriter, r *http.Request) {
	id, ok := threadParam(w, r)
	if !ok {
		return
	}
	t, err := s.Store.Thread(r.Context(), id)
	if err != nil {
		Error(w, err)
		return
	}
	v, err := s.view(r.Context(), t)
	if err != nil {
		Error(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// GET /api/threads/{id}/active: memctl export THREAD (the active context's messages).
func (s *Server) apiActive(w http.ResponseWriter, r *http.Request) {
	id, ok := threadParam(w, r)
	if !ok {
		return
	}
	a, err := s.Store.Active(r.Context(), id)
	if err != nil {
		Error(w, err)
		return
	}
	msgs := a.Messages()
	if msgs == nil {
		msgs = []chat.Message{}
	}
	writeJSON(w, http.StatusOK, msgs)
}

// GET /api/threads/{id}/reports: memctl reports THREAD --json.
func (s *Server) apiReports(w http.ResponseWriter, r *http.Request) {
	id, ok := threadParam(w, r)
	if !ok {
		return
	}
	reps, err := s.Store.Reports(r.Context(), id, 0)
	if err != nil {
		Error(w, err)
		return
	}
	writeJSON(w, http.StatusOK, reps)
}

// GET /api/reports/{id}: memctl report ID --json.
func (s *Server) apiReport(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		writeCode(w, memory.CodeInvalid, "invalid_compaction_id",
			fmt.Sprintf("%q is not a compaction id (a positive integer)", r.PathValue("id")), "")
		return
	}
	rep, err := s.Store.Report(r.Context(), id)
	if err != nil {
		Error(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// GET /api/providers: memctl providers --json.
func (s *Server) apiProviders(w http.ResponseWriter, r *http.Request) {
	st := []cascade.ProviderStatus{}
	if s.Cascade != nil {
		var err error
		if st, err = s.Cascade.Status(r.Context()); err != nil {
			Error(w, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, st)
}

// CompactRequest is the optional body of POST /api/threads/{id}/compact.
type CompactRequest struct {
	Force  bool `json:"force"`
	DryRun bool `json:"dry_run"`
}

// POST /api/threads/{id}/compact: memctl compact THREAD --json. The answer is the report
// whatever its status (failed included), 200; it waits for a compaction of the thread that
// is running in the background.
func (s *Server) apiCompact(w http.ResponseWriter, r *http.Request) {
	id, ok := threadParam(w, r)
	if !ok {
		return
	}
	var req CompactRequest
	body, free, ok := s.readBody(w, r, openAI, 1<<10)
	if !ok {
		return
	}
	free()
	if len(body) > 0 {
		if !isJSON(r) {
			writeCode(w, CodeUnsupported, "unsupported_media_type",
				"the request body must be JSON, sent with Content-Type: application/json", "")
			return
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeCode(w, memory.CodeInvalid, "invalid_request",
				`want {"force": true|false, "dry_run": true|false}: `+err.Error(), "")
			return
		}
	}
	if _, err := s.Store.Thread(r.Context(), id); err != nil {
		Error(w, err)
		return
	}
	st := s.hold(id)
	defer s.drop(st)
	if err := acquire(r.Context(), st.compact); err != nil {
		return
	}
	rep, err := s.Compactor.Compact(r.Context(), id, compact.Options{Force: req.Force, DryRun: req.DryRun})
	release(st.compact)
	if rep.Status == "" {
		Error(w, err)
		return
	}
	s.logCompaction(id, rep, err)
	writeJSON(w, http.StatusOK, rep)
}
