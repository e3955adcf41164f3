package cascade

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// assumedWindowTTL is how long a window assumed for a server that did not say is used before
// the server is asked again (it may have been starting).
const assumedWindowTTL = time.Minute

// Windows reads the context windows of the models one OpenAI-compatible server serves, and
// caches them per model: memctl serve knows so the window of the model it fronts. It asks the
// server as the cascade asks an entry with context_window auto ([OpenAI.ReadWindow]: vLLM's
// max_model_len, llama.cpp's n_ctx, Ollama's num_ctx or context_length, LiteLLM's model info),
// trusts an answer for TTL, asks again after Forget (the server refused a prompt as too long),
// and assumes Default for a server that does not say, with one warning per model (Warn).
type Windows struct {
	BaseURL   string              // the server's base URL, ending in /v1
	APIKeyEnv string              // the variable holding its key ("" none)
	Getenv    func(string) string // default os.Getenv
	// HTTPClient, when set, is used for the probes.
	HTTPClient *http.Client
	TTL        time.Duration           // 0: DefaultWindowTTL
	Default    int                     // 0: DefaultAutoWindow
	Now        func() time.Time        // nil: time.Now
	Warn       func(model, msg string) // nil: no warning

	mu     sync.Mutex
	cache  map[string]ModelWindow
	warned map[string]bool
}

// ModelWindow is a model's context window and where it came from.
type ModelWindow struct {
	Tokens int `json:"tokens"`
	// Source says where the window was read, or why it is assumed.
	Source string `json:"source"`
	// Assumed is true when the server did not say: Tokens is the default.
	Assumed bool      `json:"assumed"`
	At      time.Time `json:"read_at"`
}

// Window returns model's window: the cached one while it is fresh, else the one the server
// reports now, else the default.
func (w *Windows) Window(ctx context.Context, model string) ModelWindow {
	now := w.now()
	w.mu.Lock()
	c, ok := w.cache[model]
	w.mu.Unlock()
	ttl := w.TTL
	if ttl <= 0 {
		ttl = DefaultWindowTTL
	}
	if c.Assumed {
		ttl = min(ttl, assumedWindowTTL)
	}
	if ok && now.Sub(c.At) < ttl {
		return c
	}
	p := NewOpenAI(OpenAIConfig{Name: "upstream", BaseURL: w.BaseURL, Model: model, APIKeyEnv: w.APIKeyEnv, Getenv: w.Getenv, HTTPClient: w.HTTPClient})
	pctx, cancel := context.WithTimeout(ctx, windowProbeTimeout)
	n, source, err := p.ReadWindow(pctx)
	cancel()
	win := ModelWindow{Tokens: n, Source: source, At: now}
	if err == nil {
		if werr := checkWindow(n); werr != nil {
			err = fmt.Errorf("the server reported a window of %d tokens: %w", n, werr)
		}
	}
	if err != nil {
		def := w.Default
		if def <= 0 {
			def = DefaultAutoWindow
		}
		win = ModelWindow{Tokens: def, Source: fmt.Sprintf("assumed (%d tokens): %s", def, err), Assumed: true, At: now}
	}
	w.mu.Lock()
	if w.cache == nil {
		w.cache, w.warned = map[string]ModelWindow{}, map[string]bool{}
	}
	w.cache[model] = win
	warn := win.Assumed && !w.warned[model]
	if warn {
		w.warned[model] = true
	}
	w.mu.Unlock()
	if warn && w.Warn != nil {
		w.Warn(model, win.Source)
	}
	return win
}

// Cached returns the windows read so far, by model.
func (w *Windows) Cached() map[string]ModelWindow {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]ModelWindow, len(w.cache))
	for k, v := range w.cache {
		out[k] = v
	}
	return out
}

// Learn caches window as model's, read from source (a refusal that named it): an upstream that
// reports no window teaches it by refusing a prompt over it. A window out of range is ignored.
func (w *Windows) Learn(model string, window int, source string) {
	if checkWindow(window) != nil {
		return
	}
	w.mu.Lock()
	if w.cache == nil {
		w.cache, w.warned = map[string]ModelWindow{}, map[string]bool{}
	}
	w.cache[model] = ModelWindow{Tokens: window, Source: source, At: w.now()}
	w.mu.Unlock()
}

// Forget drops model's cached window: the next Window asks the server again.
func (w *Windows) Forget(model string) {
	w.mu.Lock()
	delete(w.cache, model)
	w.mu.Unlock()
}

func (w *Windows) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}
