package serve_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/serve"
)

// X-Memctl-Reset is one transaction: a reset whose request is refused (an invalid message)
// changes nothing, neither archive nor deletion; a reset that goes through archives the old
// history, and the thread keeps its own settings (its limit).
func TestResetIsATransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	if code, body, _ := e.post("/t/r/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`); code != 200 {
		t.Fatalf("first turn: %d %s", code, body)
	}
	limit := 3000
	if err := compact.SaveThreadSettings(ctx, e.store, "r", compact.ThreadSettings{TokenLimit: &limit}); err != nil {
		t.Fatal(err)
	}
	threads := func() []string {
		ts, err := e.store.Threads(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, th := range ts {
			ids = append(ids, th.ID)
		}
		return ids
	}
	code, body, hdr := e.post("/t/r/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"again"},{"role":"wizard","content":"x"}]}`, serve.ResetHeader, "1")
	if code != 400 || errorCode(t, body) != "invalid_message" || !strings.Contains(body, "messages[1]") || hdr.Get(serve.ArchivedHeader) != "" {
		t.Fatalf("refused reset: %d %s (archived as %q)", code, body, hdr.Get(serve.ArchivedHeader))
	}
	if got, want := threads(), []string{"r"}; !slices.Equal(got, want) {
		t.Fatalf("after a refused reset the threads are %q, want %q: nothing archived", got, want)
	}
	if got, want := e.history("r"), []string{"user: hello", "assistant: reply 1"}; !slices.Equal(got, want) {
		t.Fatalf("after a refused reset the history is %q, want %q", got, want)
	}
	code, body, hdr = e.post("/t/r/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"again"}]}`, serve.ResetHeader, "1")
	archive := hdr.Get(serve.ArchivedHeader)
	if code != 200 || !strings.HasPrefix(archive, "r.reset-") {
		t.Fatalf("reset: %d %s (archived as %q)", code, body, archive)
	}
	if got, want := e.history("r"), []string{"user: again", "assistant: reply 2"}; !slices.Equal(got, want) {
		t.Fatalf("after the reset the history is %q, want %q", got, want)
	}
	if got, want := e.history(archive), []string{"user: hello", "assistant: reply 1"}; !slices.Equal(got, want) {
		t.Fatalf("archive %s holds %q, want %q", archive, got, want)
	}
	ts, err := compact.ThreadSettingsOf(ctx, e.store, "r")
	if err != nil || ts.TokenLimit == nil || *ts.TokenLimit != limit {
		t.Fatalf("after the reset the thread's settings are %+v (%v), want its token_limit %d kept", ts, err, limit)
	}
}
