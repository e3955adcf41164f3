package serve_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestOpenAIConventions: /v1/models is the upstream's (under /t/THREAD/v1 too); a client that
// cannot change the path names the thread in a header; a wrong base URL gets an error in
// OpenAI's shape that names the right one; an answer before which a compaction ran says so.
func TestOpenAIConventions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{limit: 2000})
	e.up.set(func(u *upstream) { u.window, u.way = 100000, "vllm" })
	for _, path := range []string{"/t/a/v1/models", "/v1/models"} {
		status, body, _ := e.get(path)
		if status != http.StatusOK || !strings.Contains(body, `"max_model_len":100000`) {
			t.Errorf("GET %s: %d %s", path, status, body)
		}
	}

	chat := `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
	if status, body, _ := e.post("/v1/chat/completions", chat, "X-Memctl-Thread", "by-header"); status != http.StatusOK {
		t.Fatalf("POST /v1/chat/completions with the header: %d %s", status, body)
	}
	if h := e.history("by-header"); len(h) != 2 || h[0] != "user: hello" {
		t.Fatalf("history of the thread named by the header: %q", h)
	}
	if status, body, _ := e.post("/v1/chat/completions", chat); status != http.StatusBadRequest || errorCode(t, body) != "missing_thread" {
		t.Fatalf("without the header: %d %s", status, body)
	}

	for _, path := range []string{"/v1/chat/completion", "/t/a/chat/completions", "/api/nothing"} {
		status, body, _ := e.post(path, chat)
		if status != http.StatusNotFound || errorCode(t, body) != "unknown_route" || !strings.Contains(body, "/t/THREAD/v1") {
			t.Errorf("POST %s: %d %s; want 404 unknown_route naming /t/THREAD/v1", path, status, body)
		}
	}

	var msgs []map[string]string
	for i := range 70 {
		msgs = append(msgs, map[string]string{"role": "user", "content": fmt.Sprintf("note %d: %s", i, strings.Repeat("alpha beta gamma ", 10))},
			map[string]string{"role": "assistant", "content": fmt.Sprintf("ok %d", i)})
	}
	msgs = append(msgs, map[string]string{"role": "user", "content": "and now?"})
	big, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	status, body, h := e.post("/t/big/v1/chat/completions", string(big))
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	id, err := strconv.ParseInt(h.Get("X-Memctl-Compaction"), 10, 64)
	if err != nil || h.Get("X-Memctl-Compaction-Status") != "applied" {
		t.Fatalf("compaction headers %q %q", h.Get("X-Memctl-Compaction"), h.Get("X-Memctl-Compaction-Status"))
	}
	if rep, err := e.store.Report(t.Context(), id); err != nil || rep.Thread != "big" {
		t.Fatalf("report %d: %+v %v", id, rep, err)
	}
	msgs = append(msgs, map[string]string{"role": "assistant", "content": "reply 2"}, map[string]string{"role": "user", "content": "x"})
	next, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	if status, body, h := e.post("/t/big/v1/chat/completions", string(next)); status != http.StatusOK || h.Get("X-Memctl-Compaction") != "" {
		t.Errorf("a turn without a compaction: %d %s, header %q", status, body, h.Get("X-Memctl-Compaction"))
	}
}
