package cascade

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/db"
)

// Defaults of the windows read from servers (Entry.AutoWindow).
const (
	// DefaultAutoWindow is the window assumed when the server does not say.
	DefaultAutoWindow = 4096
	// DefaultWindowTTL is how long a window read from a server is trusted.
	DefaultWindowTTL = 24 * time.Hour
	// OllamaDefaultNumCtx is the window assumed for an Ollama model whose parameters set no
	// num_ctx: Ollama then runs it with its server's default context length, which the API
	// does not report. 2048 was that default for a long time (newer servers pick 4096 or
	// more); a smaller window costs requests, a larger one would be cut silently by the server.
	OllamaDefaultNumCtx = 2048
)

// MaxWindow bounds the window a server may report for a model: 2^28 tokens (268,435,456),
// some 25 times the largest window any model announces (10 million tokens in 2025). A larger
// value, like one of 0 or less, is the server's mistake, not a window: it is skipped as if the
// server had not said (the probe says why), for that model alone. memctl serve divides a
// window by a calibration ratio of at least 0.5, so its limit stays within
// memory.MaxTokenLimit (2^30), the largest settings resolve.
const MaxWindow = 1 << 28

// checkWindow reports why n tokens is not a window a server may report (nil when it is).
func checkWindow(n int) error {
	if n <= 0 || n > MaxWindow {
		return windowRange(strconv.Itoa(n))
	}
	return nil
}

func windowRange(v string) error {
	return fmt.Errorf("%s is out of range (a window is 1 to %d tokens)", v, MaxWindow)
}

// windowField reads a window a server reported in a JSON field (raw, nil when absent): 0 when
// the field is absent or null, else a whole number checked as checkWindow checks it (4096.0
// is 4096; 3000.5, "4096" and 1e15 are errors naming the value).
func windowField(raw json.RawMessage) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	switch {
	case errors.Is(err, strconv.ErrRange) && raw[0] != '"':
		return 0, windowRange(string(raw))
	case err != nil || f != math.Trunc(f):
		return 0, fmt.Errorf("%.64s is not a whole number of tokens", raw)
	case f <= 0 || f > MaxWindow:
		return 0, windowRange(string(raw))
	}
	return int(f), nil
}

// windowProbeTimeout bounds the reading of a window from a server, all its requests included.
const windowProbeTimeout = 5 * time.Second

// probeBodyLimit bounds the bytes read from each answer of a window probe.
const probeBodyLimit = 4 << 20

// WindowReader is implemented by a provider that can ask its server for the model's context
// window (see OpenAI.ReadWindow).
type WindowReader interface {
	// ReadWindow returns the model's window in tokens and where it was read (for messages),
	// or an error saying why the server did not tell.
	ReadWindow(ctx context.Context) (tokens int, source string, err error)
}

// window returns the context window of entry e for this turn: its configured one, or, for an
// entry whose window is read from its server (AutoWindow), the one cached in the database
// while it is fresh, else the one the server reports now (then cached), else the fallback
// (Entry.ContextWindow when set, else DefaultWindow), reported once per cascade by an event
// of kind EventWindow whose Err says why.
func (c *Cascade) window(ctx context.Context, e *Entry, row db.ProviderCooldown) int {
	if !e.AutoWindow {
		return e.ContextWindow
	}
	ttl := c.opt.WindowTTL
	if ttl <= 0 {
		ttl = DefaultWindowTTL
	}
	if row.ContextWindow > 0 && row.ContextWindow <= MaxWindow && c.now().Sub(time.UnixMilli(row.ContextWindowAt)) < ttl {
		return int(row.ContextWindow)
	}
	if w, ok := c.readWindow(ctx, e); ok {
		return w
	}
	return c.fallbackWindow(e)
}

// readWindow asks e's server for its window; a window it reports is cached and reported by
// an EventWindow. A failure is reported once per cascade and entry.
func (c *Cascade) readWindow(ctx context.Context, e *Entry) (int, bool) {
	var tokens int
	var source string
	err := fmt.Errorf("the provider cannot report its window")
	if r, ok := e.Provider.(WindowReader); ok {
		pctx, cancel := context.WithTimeout(ctx, windowProbeTimeout)
		tokens, source, err = r.ReadWindow(pctx)
		cancel()
	}
	if err == nil {
		if werr := checkWindow(tokens); werr != nil {
			err = fmt.Errorf("the server reported a window of %d tokens: %w", tokens, werr)
		}
	}
	if err != nil {
		c.warnOnce(e, fmt.Sprintf("context_window auto: %s; using %d tokens", c.opt.Redact(err.Error()), c.fallbackWindow(e)))
		return 0, false
	}
	// A cache that cannot be written costs one more probe next time, not the compaction.
	_ = c.write(ctx, func(q db.Querier, wctx context.Context) error {
		return q.SetContextWindow(wctx, db.SetContextWindowParams{Provider: e.Name, ContextWindow: int64(tokens),
			ContextWindowAt: c.now().UnixMilli()})
	})
	c.emit(Event{Provider: e.Name, Kind: EventWindow, Window: tokens, Err: "context_window auto: " + source})
	return tokens, true
}

// forgetWindow drops a cached window (a context_length answer proved it wrong): the next turn
// asks the server again.
func (c *Cascade) forgetWindow(ctx context.Context, e *Entry) {
	_ = c.write(ctx, func(q db.Querier, wctx context.Context) error {
		return q.SetContextWindow(wctx, db.SetContextWindowParams{Provider: e.Name, ContextWindowAt: c.now().UnixMilli()})
	})
}

func (c *Cascade) fallbackWindow(e *Entry) int {
	switch {
	case e.ContextWindow > 0:
		return e.ContextWindow
	case c.opt.DefaultWindow > 0:
		return c.opt.DefaultWindow
	}
	return DefaultAutoWindow
}

// warnOnce reports a fallback window by an EventWindow, once per cascade and entry.
func (c *Cascade) warnOnce(e *Entry, text string) {
	c.warnMu.Lock()
	first := !c.warned[e.Name]
	if c.warned == nil {
		c.warned = map[string]bool{}
	}
	c.warned[e.Name] = true
	c.warnMu.Unlock()
	if first {
		c.emit(Event{Provider: e.Name, Kind: EventWindow, Window: c.fallbackWindow(e), Err: text, Warning: true})
	}
}

// ReadWindow asks the server behind the provider's base URL for the model's context window,
// trying in turn the answers of the servers it knows:
//
//   - vLLM and other OpenAI-compatible servers: GET {base}/models, the model's max_model_len;
//   - llama.cpp's server: GET {root}/props, default_generation_settings.n_ctx (the window of
//     one slot), or a top-level n_ctx;
//   - Ollama: POST {root}/api/show {"model": ...}: num_ctx among the parameters when the
//     model sets it, else the smaller of the model's <architecture>.context_length and
//     OllamaDefaultNumCtx;
//   - LiteLLM's proxy: GET {root}/model/info, the model's max_input_tokens.
//
// root is the base URL without a trailing /v1. The API key (when configured) is sent to
// GET {base}/models and GET {root}/model/info only.
func (p *OpenAI) ReadWindow(ctx context.Context) (int, string, error) {
	base := strings.TrimRight(p.cfg.BaseURL, "/")
	if base == "" {
		base = strings.TrimRight(openai.DefaultConfig("").BaseURL, "/")
	}
	root := strings.TrimSuffix(base, "/v1")
	var errs []error
	for _, probe := range []func(context.Context, string, string) (int, string, error){p.modelsWindow, p.propsWindow, p.ollamaWindow, p.litellmWindow} {
		n, source, err := probe(ctx, base, root)
		if err == nil && n > 0 {
			return n, source, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return 0, "", fmt.Errorf("the server did not report the window of model %q (%w)", p.cfg.Model, errors.Join(errs...))
}

// modelsWindow reads max_model_len from GET {base}/models: the model's entry, or the only
// entry when none has the model's id. Each entry is decoded alone: an entry that is not a
// model, or whose max_model_len is not a window (checkWindow), hides no other one, and the
// latter is an error only for its own model.
func (p *OpenAI) modelsWindow(ctx context.Context, base, _ string) (int, string, error) {
	const what = "GET /v1/models"
	var body struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := p.probe(ctx, http.MethodGet, base+"/models", p.probeKey(), nil, &body); err != nil {
		return 0, "", fmt.Errorf("%s: %w", what, err)
	}
	type model struct {
		ID          string          `json:"id"`
		MaxModelLen json.RawMessage `json:"max_model_len"`
	}
	var only *model
	for _, raw := range body.Data {
		var m model
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		if len(body.Data) == 1 {
			only = &m
		}
		if m.ID != p.cfg.Model {
			continue
		}
		n, err := windowField(m.MaxModelLen)
		if err != nil {
			return 0, "", fmt.Errorf("%s: max_model_len of model %q: %w", what, m.ID, err)
		}
		if n > 0 {
			return n, fmt.Sprintf("max_model_len %d of %s", n, what), nil
		}
	}
	if only != nil && only.ID != p.cfg.Model {
		n, err := windowField(only.MaxModelLen)
		if err != nil {
			return 0, "", fmt.Errorf("%s: max_model_len of its only model, %q: %w", what, only.ID, err)
		}
		if n > 0 {
			return n, fmt.Sprintf("max_model_len %d of %s (its only model, %q)", n, what, only.ID), nil
		}
	}
	return 0, "", fmt.Errorf("%s: no max_model_len for model %q", what, p.cfg.Model)
}

// probeKey is the API key sent with the probes of servers that may need it ("" none).
func (p *OpenAI) probeKey() string {
	if p.cfg.APIKeyEnv == "" {
		return ""
	}
	return p.cfg.Getenv(p.cfg.APIKeyEnv)
}

// litellmWindow reads max_input_tokens of the model from LiteLLM's GET {root}/model/info,
// each entry decoded alone (as modelsWindow does).
func (p *OpenAI) litellmWindow(ctx context.Context, _, root string) (int, string, error) {
	const what = "GET /model/info"
	var body struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := p.probe(ctx, http.MethodGet, root+"/model/info", p.probeKey(), nil, &body); err != nil {
		return 0, "", fmt.Errorf("%s: %w", what, err)
	}
	for _, raw := range body.Data {
		var m struct {
			ModelName string `json:"model_name"`
			ModelInfo struct {
				MaxInputTokens json.RawMessage `json:"max_input_tokens"`
			} `json:"model_info"`
		}
		if json.Unmarshal(raw, &m) != nil || m.ModelName != p.cfg.Model {
			continue
		}
		n, err := windowField(m.ModelInfo.MaxInputTokens)
		if err != nil {
			return 0, "", fmt.Errorf("%s: max_input_tokens of model %q: %w", what, m.ModelName, err)
		}
		if n > 0 {
			return n, fmt.Sprintf("max_input_tokens %d of %s", n, what), nil
		}
	}
	return 0, "", fmt.Errorf("%s: no max_input_tokens for model %q", what, p.cfg.Model)
}

// propsWindow reads n_ctx from llama.cpp's GET {root}/props.
func (p *OpenAI) propsWindow(ctx context.Context, _, root string) (int, string, error) {
	const what = "GET /props"
	var body struct {
		Default struct {
			NCtx json.RawMessage `json:"n_ctx"`
		} `json:"default_generation_settings"`
		NCtx json.RawMessage `json:"n_ctx"`
	}
	if err := p.probe(ctx, http.MethodGet, root+"/props", "", nil, &body); err != nil {
		return 0, "", fmt.Errorf("%s: %w", what, err)
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"default_generation_settings.n_ctx", body.Default.NCtx}, {"n_ctx", body.NCtx}} {
		n, err := windowField(f.raw)
		if err != nil {
			return 0, "", fmt.Errorf("%s: %s: %w", what, f.name, err)
		}
		if n > 0 {
			return n, fmt.Sprintf("%s %d of %s", f.name, n, what), nil
		}
	}
	return 0, "", fmt.Errorf("%s: no n_ctx", what)
}

// ollamaWindow reads the window from Ollama's POST {root}/api/show.
func (p *OpenAI) ollamaWindow(ctx context.Context, _, root string) (int, string, error) {
	const what = "POST /api/show"
	var body struct {
		Parameters string         `json:"parameters"`
		ModelInfo  map[string]any `json:"model_info"`
	}
	req, _ := json.Marshal(map[string]string{"model": p.cfg.Model})
	if err := p.probe(ctx, http.MethodPost, root+"/api/show", "", req, &body); err != nil {
		return 0, "", fmt.Errorf("%s: %w", what, err)
	}
	if n := numCtx(body.Parameters); n > 0 {
		if err := checkWindow(n); err != nil {
			return 0, "", fmt.Errorf("%s: num_ctx: %w", what, err)
		}
		return n, fmt.Sprintf("num_ctx %d among the parameters of %s", n, what), nil
	}
	n, key := contextLength(body.ModelInfo)
	if n <= 0 {
		return 0, "", fmt.Errorf("%s: no num_ctx parameter and no <architecture>.context_length", what)
	}
	if n > OllamaDefaultNumCtx {
		return OllamaDefaultNumCtx, fmt.Sprintf("%s: the model sets no num_ctx, so Ollama's default is assumed (%d; the model's %s is %d; set num_ctx or context_window to use more)",
			what, OllamaDefaultNumCtx, key, n), nil
	}
	return n, fmt.Sprintf("%s %d of %s", key, n, what), nil
}

// numCtx reads "num_ctx N" from the parameters text of Ollama's /api/show: one parameter per
// line, its name, white space, its value.
func numCtx(params string) int {
	sc := bufio.NewScanner(strings.NewReader(params))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// contextLength reads <architecture>.context_length from Ollama's model_info, the
// architecture being general.architecture; without it, the only key ending in
// .context_length.
func contextLength(info map[string]any) (int, string) {
	num := func(v any) int {
		if f, ok := v.(float64); ok && f > 0 && f < 1<<31 {
			return int(f)
		}
		return 0
	}
	if arch, ok := info["general.architecture"].(string); ok {
		key := arch + ".context_length"
		if n := num(info[key]); n > 0 {
			return n, key
		}
	}
	found, key := 0, ""
	for k, v := range info {
		if strings.HasSuffix(k, ".context_length") && num(v) > 0 {
			if found > 0 {
				return 0, "" // several, none named by the architecture
			}
			found, key = num(v), k
		}
	}
	return found, key
}

// probe sends one request of a window probe and decodes its JSON answer into out.
func (p *OpenAI) probe(ctx context.Context, method, url, key string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return scrubKey(err, key)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, probeBodyLimit))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("not the expected JSON: %w", err)
	}
	return nil
}
