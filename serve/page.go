package serve

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memcascade/memcascade/internal/english"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
	"github.com/memcascade/memcascade/transcript"
)

//go:embed templates/*.html static/*
var assets embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"path":  url.PathEscape,
	"count": english.Count,
	"time":  func(t interface{ Format(string) string }) string { return t.Format("2006-01-02 15:04:05") },
	// dollars writes a cost: "$0.0105".
	"dollars": func(c *float64) string { return "$" + strconv.FormatFloat(*c, 'f', -1, 64) },
}).ParseFS(assets, "templates/*.html"))

// securityHeaders are set on every page: nothing is loaded from elsewhere, no script runs,
// the page is never framed.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var b strings.Builder
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		Error(w, err)
		return
	}
	securityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(b.String()))
}

// static serves the embedded stylesheet.
func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	sub, _ := fs.Sub(assets, "static")
	securityHeaders(w.Header())
	http.StripPrefix("/static/", http.FileServerFS(sub)).ServeHTTP(w, r)
}

// GET /: the threads.
func (s *Server) pageIndex(w http.ResponseWriter, r *http.Request) {
	views, err := s.threadViews(r.Context())
	if err != nil {
		Error(w, err)
		return
	}
	sum, from := s.summarizers()
	s.render(w, "index.html", map[string]any{"Threads": views, "Upstream": s.Upstream, "Summarizers": sum, "SummarizersFrom": from})
}

// entryView is a message shown on the page.
type entryView struct {
	Seq       int64
	Role      string
	Text      string
	Cut       bool // Text was shortened
	Tokens    int
	ToolCalls []string
	ToolCall  string // tool_call_id
	Summary   int64  // the compaction whose summary this is (0: a message)
}

const maxShownBytes = 4000

// pageViews are the messages of a thread's history as the page shows them: as a summarizing
// provider reads them (compact.Compactor.ProviderView over the whole history, so that what
// only the conversation shows is redacted), by seq, with the text each was read from.
type pageViews struct {
	by     map[int64]transcript.Message
	text   map[int64]string
	redact func(string) string
}

func (s *Server) pageViews(hist []memory.Entry) pageViews {
	pv := pageViews{by: map[int64]transcript.Message{}, text: map[int64]string{}, redact: s.Compactor.Redact}
	if pv.redact == nil {
		pv.redact = func(s string) string { return s }
	}
	for i, v := range s.Compactor.ProviderView(hist) {
		pv.by[hist[i].Seq], pv.text[hist[i].Seq] = v, hist[i].Text()
	}
	return pv
}

// entryOf is e as the page shows it: its view (pageViews) when e is the message as the history
// holds it; a summary (stored redacted) or a message the active context shows masked or cut,
// redacted field by field.
func (pv pageViews) entryOf(e memory.Entry) entryView {
	t, ok := pv.by[e.Seq]
	if !ok || e.CompactionID != 0 || pv.text[e.Seq] != e.Text() {
		red := pv.redact
		t = transcript.Message{Text: red(e.Text()), ToolCallID: red(e.Message.ToolCallID)}
		for _, tc := range e.Message.ToolCalls {
			t.ToolCalls = append(t.ToolCalls, transcript.ToolCall{ID: red(tc.ID), Name: red(tc.Function.Name), Arguments: red(tc.Function.Arguments)})
		}
	}
	v := entryView{Seq: e.Seq, Role: e.Message.Role, Tokens: e.Tokens, ToolCall: t.ToolCallID, Summary: e.CompactionID}
	v.Text, v.Cut = shorten(t.Text)
	for _, tc := range t.ToolCalls {
		args, _ := shorten(tc.Arguments)
		v.ToolCalls = append(v.ToolCalls, fmt.Sprintf("%s(%s) [%s]", tc.Name, args, tc.ID))
	}
	return v
}

func shorten(s string) (string, bool) {
	if len(s) <= maxShownBytes {
		return s, false
	}
	cut := maxShownBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// compactionView is one compaction, before and after.
type compactionView struct {
	Report   memory.Report
	Summary  string
	Before   []entryView // what the summary replaced
	Folded   bool        // the replaced range began with an earlier summary (not shown again)
	Attempts []memory.Attempt
	// FactsInContext: ledger facts that are in the active context after the compaction.
	FactsInContext int
}

// GET /threads/{id}[?compaction=N]: one thread, its token chart, its compactions, one of them
// before and after (the newest applied one unless named), and its active context.
func (s *Server) pageThread(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, ok := threadParam(w, r)
	if !ok {
		return
	}
	t, err := s.Store.Thread(ctx, id)
	if err != nil {
		Error(w, err)
		return
	}
	hist, err := s.Store.History(ctx, id)
	if err != nil {
		Error(w, err)
		return
	}
	reps, err := s.Store.Reports(ctx, id, 10000)
	if err != nil {
		Error(w, err)
		return
	}
	active, err := s.Store.Active(ctx, id)
	if err != nil {
		Error(w, err)
		return
	}
	view, err := s.view(ctx, t)
	if err != nil {
		Error(w, err)
		return
	}
	pv := s.pageViews(hist)
	data := map[string]any{
		"Thread":  view,
		"Chart":   makeChart(hist, reps, view.TokenLimit),
		"Reports": reps,
	}
	var selected int64
	if q := r.URL.Query().Get("compaction"); q != "" {
		if selected, err = strconv.ParseInt(q, 10, 64); err != nil || selected < 1 {
			writeCode(w, memory.CodeInvalid, "invalid_compaction_id",
				fmt.Sprintf("compaction=%q is not a compaction id (a positive integer)", q), "compaction")
			return
		}
	} else {
		for _, rep := range reps {
			if rep.Status == memory.StatusApplied && rep.ID != 0 {
				selected = rep.ID
				break
			}
		}
	}
	if selected > 0 {
		cv, err := s.compactionView(ctx, id, selected, hist, pv)
		if err != nil {
			Error(w, err)
			return
		}
		data["Selected"] = cv
	}
	entries := make([]entryView, len(active.Entries))
	for i, e := range active.Entries {
		entries[i] = pv.entryOf(e)
	}
	data["Active"] = entries
	data["ActiveTokens"] = active.Tokens
	data["Summarizer"] = s.summarizerText(id)
	s.render(w, "thread.html", data)
}

func (s *Server) compactionView(ctx context.Context, thread string, id int64, hist []memory.Entry, pv pageViews) (*compactionView, error) {
	rep, err := s.Store.Report(ctx, id)
	if err != nil {
		return nil, err
	}
	if rep.Thread != thread {
		return nil, fmt.Errorf("%w: %d is not a compaction of thread %q", memory.ErrCompactionNotFound, id, thread)
	}
	cv := &compactionView{Report: rep}
	if rep.Summary != nil {
		cv.Summary = *rep.Summary
	}
	for _, e := range hist {
		if rep.FromSeq > 0 && e.Seq >= rep.FromSeq && e.Seq <= rep.ToSeq {
			cv.Before = append(cv.Before, pv.entryOf(e))
		}
	}
	if cv.Attempts, err = s.Store.CompactionAttempts(ctx, id); err != nil {
		return nil, err
	}
	cv.FactsInContext = max(rep.FactsTotal-len(rep.FactsDropped), 0)
	return cv, nil
}

// chart is the thread's active token count after each message, with its compactions marked.
type chart struct {
	Width, Height   int
	Left, Right     float64 // plot area, x
	Top, Bottom     float64 // plot area, y
	Points          string  // the polyline
	LimitY          float64
	Limit, MaxY     int
	MaxSeq          int64
	Marks           []mark
	YTicks, XTicks  []tick
	Empty           bool
	AppliedMarks    int
	UnappliedMarks  int
	CompactionCount int
}

type mark struct {
	ID             int64
	X, Y1, Y2      float64
	LabelY         float64
	Status, Reason string
	Before, After  int
	AfterSeq       int64
	Applied        bool
}

type tick struct {
	Pos   float64
	Label string
}

// makeChart replays the history: each message adds its tokens to the active count; each
// applied compaction (superseded ones included) sets it to its tokens_after at the message it
// ran after. Compactions that changed nothing (failed, ineffective, reverted, running) are
// marked without a drop.
func makeChart(hist []memory.Entry, reps []memory.Report, limit int) chart {
	c := chart{Width: 760, Height: 240, Left: 64, Right: 740, Top: 16, Bottom: 208, Limit: limit}
	if len(hist) == 0 {
		c.Empty = true
		return c
	}
	bySeq := map[int64][]memory.Report{}
	for i := len(reps) - 1; i >= 0; i-- { // reports are newest first
		bySeq[reps[i].LastSeq] = append(bySeq[reps[i].LastSeq], reps[i])
	}
	type pt struct {
		seq    int64
		tokens int
	}
	var pts []pt
	type pending struct {
		rep         memory.Report
		before, aft int
	}
	var marks []pending
	y := 0
	pts = append(pts, pt{0, 0})
	maxY := limit
	for _, e := range hist {
		y += e.Tokens
		pts = append(pts, pt{e.Seq, y + tokencount.ReplyPriming})
		maxY = max(maxY, y+tokencount.ReplyPriming)
		for _, rep := range bySeq[e.Seq] {
			before := y + tokencount.ReplyPriming
			if rep.Status == memory.StatusApplied {
				// The context it left: its own part and the messages appended while it ran.
				after := rep.TokensAfter + rep.TokensAppended
				y = after - tokencount.ReplyPriming
				pts = append(pts, pt{e.Seq, after})
			}
			marks = append(marks, pending{rep, before, y + tokencount.ReplyPriming})
		}
	}
	c.MaxSeq = hist[len(hist)-1].Seq
	c.MaxY = maxY + maxY/20 + 1
	x := func(seq int64) float64 {
		return c.Left + float64(seq)/float64(max(c.MaxSeq, 1))*(c.Right-c.Left)
	}
	yy := func(tokens int) float64 {
		return c.Bottom - float64(tokens)/float64(c.MaxY)*(c.Bottom-c.Top)
	}
	var b strings.Builder
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x(p.seq), yy(p.tokens))
	}
	c.Points = b.String()
	c.LimitY = yy(limit)
	for i, m := range marks {
		applied := m.rep.Status == memory.StatusApplied
		c.Marks = append(c.Marks, mark{
			ID: m.rep.ID, X: x(m.rep.LastSeq), Y1: c.Top, Y2: c.Bottom, LabelY: c.Top + 10 + float64(i%3)*11,
			Status: string(m.rep.Status), Reason: string(m.rep.Reason), Before: m.before, After: m.aft, AfterSeq: m.rep.LastSeq,
			Applied: applied,
		})
		c.CompactionCount++
		if applied {
			c.AppliedMarks++
		} else {
			c.UnappliedMarks++
		}
	}
	for _, f := range []float64{0, 0.5, 1} {
		v := int(f * float64(c.MaxY))
		c.YTicks = append(c.YTicks, tick{yy(v), strconv.Itoa(v)})
	}
	for _, f := range []float64{0, 0.5, 1} {
		seq := int64(f * float64(c.MaxSeq))
		c.XTicks = append(c.XTicks, tick{x(seq), strconv.FormatInt(seq, 10)})
	}
	return c
}

// summarizers says which cascade writes the summaries (see summarizerText), and where it
// comes from: serve's default (the upstream rung, then offline) or the config's cascade.
func (s *Server) summarizers() (text, from string) {
	text, from = s.summarizerText(""), "the config's cascade, in order"
	if s.upstreamRung != nil {
		from = "serve's default, as the config names no cascade: the model serve fronts, then the offline rung when it fails"
	}
	return text, from
}
