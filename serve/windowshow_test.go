package serve_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestWindowShown: the window a thread is fitted in under token_limit auto is recorded on the
// thread with where it came from: the inspection API and the thread's page show it.
func TestWindowShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{auto: true})
	e.up.set(func(u *upstream) { u.window, u.way = 3000, "vllm" })
	chatTurns(t, e, "w", 2)
	status, body, _ := e.get("/api/threads/w")
	var v struct {
		TokenLimit     int    `json:"token_limit"`
		TokenLimitFrom string `json:"token_limit_from"`
		Settings       struct {
			Window struct {
				Model  string `json:"model"`
				Tokens int    `json:"tokens"`
				Source string `json:"source"`
			} `json:"window"`
		} `json:"settings"`
	}
	if err := json.Unmarshal([]byte(body), &v); status != http.StatusOK || err != nil {
		t.Fatalf("%d %s", status, body)
	}
	if v.TokenLimit != 3000 || v.TokenLimitFrom != "upstream" || v.Settings.Window.Tokens != 3000 || v.Settings.Window.Model != "m" ||
		!strings.Contains(v.Settings.Window.Source, "max_model_len 3000 of GET /v1/models") {
		t.Fatalf("thread: %s", body)
	}
	status, page, _ := e.get("/threads/w")
	if status != http.StatusOK || !strings.Contains(page, "limit from upstream: the window of m, 3000 tokens (max_model_len 3000 of GET /v1/models") {
		t.Fatalf("page %d does not show the window:\n%s", status, page)
	}
}
