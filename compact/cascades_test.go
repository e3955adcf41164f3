package compact_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/transcript"
)

// replying is a fake provider that answers every request with a short summary.
func replying() *cascade.Fake {
	return &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return llm.Response{Text: "## Work done\nThe user and the agent worked on the booking.", FinishReason: "stop", Model: "m"}, nil
	}}
}

// A thread on a named cascade is summarized by that cascade's providers only; with a part
// cascade, that cascade's providers get every part of the middle, each on its own, and the
// thread's cascade one request: the final summary, written from the part summaries. Unset, the
// thread is back on the compactor's own summarizer; a name the compactor does not know is a
// setting error, and no provider is asked.
func TestNamedCascades(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	def, mainP, partP := replying(), replying(), replying()
	casc := func(name string, p *cascade.Fake, window int) *cascade.Cascade {
		return cascade.NewWith(s.DB(), cascade.Options{Now: s.Now}, fakeEntry(name, p, window))
	}
	c := compact.NewWith(s, casc("def", def, 0), compact.Settings{TokenLimit: 6000}, compact.Config{
		Summarizers: map[string]compact.Summarizer{"big": casc("big", mainP, 0), "small": casc("small", partP, 2048)},
	})
	if got := strings.Join(c.Cascades(), ","); got != "big,small" {
		t.Fatalf("Cascades() = %s; want big,small", got)
	}
	calls := func() [3]int { return [3]int{len(def.Calls()), len(mainP.Calls()), len(partP.Calls())} }
	compactThread := func(id string, ts compact.ThreadSettings) memory.Report {
		t.Helper()
		storetest.Import(t, s, id, longConversation)
		if err := compact.SaveThreadSettings(ctx, s, id, ts); err != nil {
			t.Fatal(err)
		}
		rep, err := c.Compact(ctx, id, compact.Options{Force: true})
		if err != nil || rep.Status != memory.StatusApplied {
			t.Fatalf("thread %s: %s, %v; want applied", id, rep.Status, err)
		}
		return rep
	}

	rep := compactThread("on-big", compact.ThreadSettings{Cascade: "big"})
	if got := calls(); got[0] != 0 || got[1] != 1 || got[2] != 0 || rep.Provider != "big" {
		t.Fatalf("a thread on cascade big: requests (default, big, small) = %v, provider %s; want [0 1 0], big", got, rep.Provider)
	}

	rep = compactThread("in-parts", compact.ThreadSettings{Cascade: "big", PartCascade: "small"})
	got := calls()
	parts := got[2]
	if got[0] != 0 || got[1] != 2 || parts < 3 || rep.Provider != "big" {
		t.Fatalf("a thread on big with part cascade small: requests (default, big, small) = %v, provider %s; want [0 2 >=3], big", got, rep.Provider)
	}
	for i, req := range partP.Calls() {
		if req.Accept != nil || req.Running != "" || len(req.Transcript) == 0 || req.Transcript[0].Role == transcript.RoleSummary {
			t.Fatalf("part request %d: accept set %v, running %q, %d messages: want a part of the transcript on its own", i+1, req.Accept != nil, req.Running, len(req.Transcript))
		}
	}
	final := mainP.Calls()[1]
	if final.Accept == nil || len(final.Transcript) != parts {
		t.Fatalf("final request: accept set %v, %d messages; want the %d part summaries, held to the budget", final.Accept != nil, len(final.Transcript), parts)
	}
	for _, m := range final.Transcript {
		if m.Role != transcript.RoleSummary {
			t.Fatalf("final request holds a %s message: want only part summaries", m.Role)
		}
	}
	t.Logf("part cascade: %d part requests, 1 final request", parts)
	if rep.Chunks != parts+1 {
		t.Fatalf("chunks %d; want the %d part requests and the final one", rep.Chunks, parts)
	}

	// --unset: back on the compactor's own summarizer.
	ts := compact.ThreadSettings{Cascade: "big"}
	ts.Unset(compact.KeyCascade)
	before := calls()
	rep = compactThread("back", ts)
	if got := calls(); got[0] != before[0]+1 || got[1] != before[1] || got[2] != before[2] || rep.Provider != "def" {
		t.Fatalf("after unset: requests %v -> %v, provider %s; want one more of the default only", before, got, rep.Provider)
	}

	// A name the compactor does not know: a setting error naming the key, no request.
	storetest.Import(t, s, "lost", longConversation)
	if err := compact.SaveThreadSettings(ctx, s, "lost", compact.ThreadSettings{PartCascade: "gone"}); err != nil {
		t.Fatal(err)
	}
	before = calls()
	_, err := c.Compact(ctx, "lost", compact.Options{Force: true})
	var se *compact.SettingError
	if !errors.As(err, &se) || se.Key != compact.KeyPartCascade || !strings.Contains(err.Error(), `"gone"`) || calls() != before {
		t.Fatalf("unknown part cascade: %v (requests %v -> %v); want a setting error naming part_cascade and gone, no request", err, before, calls())
	}
}

// The names a compaction's settings may give: reserved names and malformed ones are refused.
func TestCascadeNameRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ts  compact.ThreadSettings
		key string
	}{
		{compact.ThreadSettings{Cascade: "none"}, compact.KeyCascade},
		{compact.ThreadSettings{Cascade: "a b"}, compact.KeyCascade},
		{compact.ThreadSettings{PartCascade: "-x"}, compact.KeyPartCascade},
	} {
		var se *compact.SettingError
		if err := c.ts.Validate(); !errors.As(err, &se) || se.Key != c.key {
			t.Errorf("%+v: Validate = %v; want a setting error of %s", c.ts, err, c.key)
		}
	}
	for _, ts := range []compact.ThreadSettings{{Cascade: "default"}, {PartCascade: "none"}, {Cascade: "cheap.v2", PartCascade: "default"}} {
		if err := ts.Validate(); err != nil {
			t.Errorf("%+v: Validate = %v; want valid", ts, err)
		}
	}
	if p := compact.CascadeNameProblem("default"); p == "" {
		t.Error("default is a name of one's own; want it reserved")
	}
}
