package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/serve"
)

func (a *app) serveCommand() *cobra.Command {
	var listen, upstream, upstreamKeyEnv, tokenEnv string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the compacting proxy, the inspection API and the page",
		Long: `Serve a proxy in front of the agent's model that stores every turn and sends the upstream
model each thread's compacted active context. An agent sets its base URL to
http://ADDR/t/THREAD/v1 (or http://ADDR with Anthropic's SDKs and Claude Code). It speaks
OpenAI Chat Completions (POST /v1/chat/completions), and each API shape registered in
serve/dialects.go (see docs/serve.md). Also served: the inspection API (/api/...), a page (/)
and the MCP tools (/mcp).

Summaries are written, when the config names no cascade, by the model serve fronts (the
upstream rung: a thread is summarized in the API shape of its latest request, with that
request's model and the key its turns reach the upstream with), then by the built-in offline
summarizer when the upstream fails: "summarizer: upstream (anthropic_messages, model M),
then offline". A cascade in the config replaces both. The page and the startup log line
name the summarizers.

--listen defaults to 127.0.0.1:8787 (loopback). A non-loopback address needs --token-env:
then every request must carry Authorization: Bearer <the variable's value>. The upstream's
key is read from the variable named by --upstream-key-env, never from a flag or a file.
Flags win over the config's serve: section. SIGINT or SIGTERM stops it gracefully: replies
in flight finish and are stored; a second signal stops at once.

With compaction.token_limit auto (the default when the config sets none), a thread is fitted
in the window the upstream reports for the request's model (vLLM, llama.cpp, Ollama,
LiteLLM; 4096 tokens and a warning when it does not say), divided by the ratio of the
upstream's token count to the local one measured on each reply. An upstream answer that the
prompt is too long is absorbed: the thread is compacted to a smaller budget and the request
sent once more. GET /v1/models is the upstream's; POST /v1/chat/completions takes the thread
in the header X-Memctl-Thread.`,
		Example: `  memctl serve --upstream http://127.0.0.1:11434/v1
  OPENAI_API_KEY=... memctl serve --upstream https://api.openai.com/v1 --upstream-key-env OPENAI_API_KEY
  MEMCTL_TOKEN=... memctl serve --listen 0.0.0.0:8787 --token-env MEMCTL_TOKEN --upstream http://gpu-box:8000/v1`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			sc := cfg.WithDefaults().Serve
			f := cmd.Flags()
			if f.Changed("listen") {
				sc.Listen = listen
			}
			if f.Changed("upstream") {
				sc.Upstream = upstream
			}
			if f.Changed("upstream-key-env") {
				sc.UpstreamKeyEnv = upstreamKeyEnv
			}
			if f.Changed("token-env") {
				sc.TokenEnv = tokenEnv
			}
			srv, err := a.newServer(cmd.Context(), sc)
			if err != nil {
				return err
			}
			if cfg.Compaction.TokenLimit == config.WindowAuto && sc.Upstream != "" {
				// token_limit auto (the default): the window of each model, read from the upstream.
				srv.Windows = &cascade.Windows{BaseURL: sc.Upstream, APIKeyEnv: sc.UpstreamKeyEnv, Getenv: a.getenv,
					Warn: func(model, msg string) {
						srv.Logger.Warn("the upstream does not report the window of the model: a default is assumed", "model", model, "window", msg)
					}}
			}
			return a.serve(cmd.Context(), srv, sc)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "", "the address to listen on, HOST:PORT (default: the config's serve.listen, 127.0.0.1:8787)")
	f.StringVar(&upstream, "upstream", "", "the base URL of the agent's model, ending in /v1")
	f.StringVar(&upstreamKeyEnv, "upstream-key-env", "", "the environment variable that holds the upstream's API key")
	f.StringVar(&tokenEnv, "token-env", "", "the environment variable that holds the token clients must send (required off loopback)")
	return cmd
}

// newServer checks the serve settings sc (the listen address, the secrets' variables, the
// upstream URL) and builds the server on the store, with the compactor of newCompactor.
func (a *app) newServer(ctx context.Context, sc config.Serve) (*serve.Server, error) {
	loopback, err := serve.IsLoopback(sc.Listen)
	if err != nil {
		return nil, usagef("--listen: %v", err)
	}
	token, err := a.secretEnv("--token-env", sc.TokenEnv)
	if err != nil {
		return nil, err
	}
	if !loopback && token == "" {
		return nil, usagef("--listen %s is not a loopback address: it needs --token-env VAR, the environment variable holding the token every client must send", sc.Listen)
	}
	key, err := a.secretEnv("--upstream-key-env", sc.UpstreamKeyEnv)
	if err != nil {
		return nil, err
	}
	if sc.Upstream != "" && !strings.HasPrefix(sc.Upstream, "http://") && !strings.HasPrefix(sc.Upstream, "https://") {
		return nil, usagef("--upstream %q: want the model's http(s) base URL, ending in /v1", sc.Upstream)
	}
	s, err := a.open(ctx, forCreating)
	if err != nil {
		return nil, err
	}
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	// What a burst of first turns would each wait for (the encoding of new threads, the
	// pool's connections) made ready before serving (memory.Store.Prewarm). What fails costs
	// the first turns their wait only.
	conns := prewarmConns
	if !a.h.OneWriter() {
		conns = prewarmShared
	}
	if err := s.Prewarm(ctx, conns); err != nil {
		a.logger.Warn("not all made ready before serving", "error", err.Error())
	}
	srv := &serve.Server{
		Store: s, Upstream: sc.Upstream, UpstreamKey: key, UpstreamPrice: sc.PricePerMTok.LLM(), Token: token,
		Logger: a.logger, LoopbackOnly: loopback && token == "", Recall: sc.Recall,
		Notice: serve.Notice{Enabled: sc.Notice.Enabled, AtRatio: sc.Notice.AtRatio},
	}
	var first []cascade.Entry
	if sc.Upstream != "" && !cfg.NamesCascade() {
		// The summarizer by default: the model serve fronts, then the offline rung.
		first = []cascade.Entry{srv.UpstreamEntry()}
	}
	srv.Compactor, srv.Cascade, err = cfg.NewCompactorWith(a.h, a.store, cascade.Options{}, compact.Config{}, first)
	if err != nil {
		return nil, err
	}
	return srv, nil
}

// prewarmConns is how many connections memctl serve opens before serving: as many requests
// as run at once on a small machine without any of them opening one.
const prewarmConns = 32

// prewarmShared is that number on a database server many processes share (PostgreSQL):
// every serve process of a fleet opens them, within the server's max_connections (100 by
// default), so it opens fewer and the pool opens the rest as a burst needs them.
const prewarmShared = 8

// serve runs srv on sc.Listen until ctx is done, then stops it gracefully: the first signal
// stops accepting and waits for the replies in flight; a second one stops at once.
func (a *app) serve(ctx context.Context, srv *serve.Server, sc config.Serve) error {
	logger := srv.Logger
	ln, err := net.Listen("tcp", sc.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", sc.Listen, err)
	}
	upstreamText := sc.Upstream
	if upstreamText == "" {
		upstreamText = "none (--upstream): the proxy answers 503"
	}
	var summarizers []string
	if srv.Cascade != nil {
		for _, e := range srv.Cascade.Entries {
			summarizers = append(summarizers, e.Name)
		}
	}
	logger.Info("serving", "addr", ln.Addr().String(), "base_url", fmt.Sprintf("http://%s/t/THREAD/v1", ln.Addr()),
		"upstream", upstreamText, "token", srv.Token != "", "summarizers", strings.Join(summarizers, ", "))
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(srv.MemoryLimit()) // the server's bounds, not the garbage's growth, set its size
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down: finishing the replies in flight (a second signal stops at once)")
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	go func() {
		select {
		case <-again:
			cancel()
		case <-sctx.Done():
		}
	}()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	<-errc
	return nil
}

// secretEnv reads a secret from the environment variable named by a flag ("" when no variable
// is named). A named variable that is unset is a usage error naming it, never its value.
func (a *app) secretEnv(flag, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	if !serveEnvName(name) {
		return "", usagef("%s must name an environment variable, not hold a secret", flag)
	}
	v := strings.TrimSpace(a.getenv(name))
	if v == "" {
		return "", usagef("%s %s: the environment variable is not set", flag, name)
	}
	return v, nil
}

func serveEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
