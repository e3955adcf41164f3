package serve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/compact"
)

// TestSettingsThroughTheOneRule: serve takes a thread's settings from compact.Resolve, the
// compactor's rule. A thread whose own settings are valid alone but not with the config's (a
// trigger_ratio under the config's target_ratio) has its turn refused with a 400
// invalid_settings naming the keys, not fitted with settings no compaction would accept; its
// view shows the strategy of resolved settings only.
func TestSettingsThroughTheOneRule(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	turn := `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`
	if code, body, _ := e.post("/t/s/v1/chat/completions", turn); code != 200 {
		t.Fatalf("first turn: %d %s", code, body)
	}
	view := func() map[string]any {
		t.Helper()
		code, body, _ := e.get("/api/threads/s")
		var v map[string]any
		if code != 200 || json.Unmarshal([]byte(body), &v) != nil {
			t.Fatalf("GET /api/threads/s: %d %s", code, body)
		}
		return v
	}
	if got := view()["strategy"]; got != "summarize" {
		t.Fatalf("strategy of valid settings = %v, want summarize", got)
	}
	trigger := compact.DefaultTargetRatio - 0.2
	if err := compact.SaveThreadSettings(ctx, e.store, "s", compact.ThreadSettings{TriggerRatio: &trigger}); err != nil {
		t.Fatal(err)
	}
	code, body, _ := e.post("/t/s/v1/chat/completions", turn)
	if code != 400 || errorCode(t, body) != "invalid_settings" || !strings.Contains(body, "trigger_ratio") || !strings.Contains(body, "target_ratio") {
		t.Fatalf("turn with settings that do not resolve: %d %s; want 400 invalid_settings naming trigger_ratio and target_ratio", code, body)
	}
	if got := view()["strategy"]; got != "" {
		t.Fatalf("strategy of settings that do not resolve = %v, want \"\"", got)
	}
}
