// Package serve is memctl's HTTP server: an OpenAI-compatible chat completions proxy that
// stores every turn of a thread and sends the model the thread's compacted active context,
// a JSON inspection API, and a page that shows the threads and their compactions.
//
// An agent sets its OpenAI base URL to http://ADDR/t/THREAD/v1 and calls chat completions as
// it would call OpenAI. What the proxy does with a request:
//
//   - The request's messages are reconciled with the thread's stored history (see Reconcile):
//     an agent may resend its whole conversation every turn, or only the new turn; what is
//     already stored is recognised and appended never twice. A request that contradicts the
//     history (an earlier message edited) is answered 409, naming the first differing
//     message, unless it carries the header X-Memctl-Reset: 1 (see ResetHeader).
//   - The new messages are appended as soon as they are valid, before the model is called, so
//     the retry of a request whose model call failed appends nothing twice.
//   - The model receives the thread's active context (the new messages included), never more
//     than the thread's limit: over it, a compaction with reason emergency runs first.
//     Compactions that are merely due run in the background after the reply, one at a time
//     per thread.
//   - The reply (streamed or not) is passed to the client unchanged and appended to the
//     thread once complete. A stream the client abandons, or that breaks, stores nothing.
package serve

import (
	"container/list"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// Defaults of a Server.
const (
	// DefaultMaxBodyBytes bounds a request body (images in a conversation are large).
	DefaultMaxBodyBytes = 32 << 20
	// DefaultMaxReplyBytes bounds a reply of the upstream model, streamed or not.
	DefaultMaxReplyBytes = 64 << 20
	// DefaultMaxSSEEventBytes bounds one event of an upstream's stream (its lines up to the
	// blank line that ends it).
	DefaultMaxSSEEventBytes = 16 << 20
	// DefaultMaxInFlightBytes bounds the bytes of request bodies and upstream replies held
	// at once over all requests (see Server.MaxInFlightBytes).
	DefaultMaxInFlightBytes = 128 << 20
	// DefaultCacheBytes and DefaultCacheIdle bound the threads' state kept between turns.
	DefaultCacheBytes = 64 << 20
	DefaultCacheIdle  = 10 * time.Minute
	// DefaultReadBodyTimeout bounds the time a client takes to send a request body, from
	// its headers; DefaultReadBodyStall the time it may send no byte of it.
	DefaultReadBodyTimeout = 10 * time.Second
	DefaultReadBodyStall   = 5 * time.Second
	// UpstreamIdleConns is how many idle connections to the upstream the default client keeps.
	UpstreamIdleConns = 128
	// ReadHeaderTimeout and IdleTimeout are those of the http.Server.
	ReadHeaderTimeout = 10 * time.Second
	IdleTimeout       = 2 * time.Minute
)

// Server serves the proxy, the inspection API and the page. Set its fields, then call Serve
// (or use Handler with a server of your own); Shutdown stops it.
type Server struct {
	// Store holds the threads; Compactor compacts them (its Settings are the config's).
	Store     *memory.Store
	Compactor *compact.Compactor
	// Cascade is the compactor's cascade, for /api/providers and the attempts of a report
	// (nil: /api/providers lists nothing).
	Cascade *cascade.Cascade

	// Upstream is the base URL of the agent's real model, ending in /v1 (OpenAI, Ollama,
	// llama.cpp, vLLM...). UpstreamKey is its API key ("": none), sent as a bearer token.
	Upstream    string
	UpstreamKey string
	// UpstreamPrice is what the upstream charges (nil: no price): each reply stored with a
	// usage adds its cost at this price, prompt tokens (cached ones included) at the input
	// price and completion tokens at the output price, to its thread's (Thread.Upstream.Cost).
	UpstreamPrice *llm.Price
	// Token, when set, is the bearer token every request must carry.
	Token string
	// Client calls the upstream (nil: a client without a global timeout: replies stream; it
	// keeps UpstreamIdleConns connections).
	Client *http.Client
	// MaxBodyBytes bounds a request body (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxReplyBytes bounds an upstream's reply, streamed or not (0: DefaultMaxReplyBytes).
	MaxReplyBytes int64
	// MaxSSEEventBytes bounds one event of an upstream's stream, its data lines together
	// (0: DefaultMaxSSEEventBytes); one line is bounded by MaxSSELineBytes.
	MaxSSEEventBytes int64
	// MaxInFlightBytes bounds the bytes held at once over all requests: request bodies and
	// non-streamed replies, each counted twice (its bytes and its parse), and what each
	// stream's relay keeps for storing (dialect.Holder); past it a request is answered 503
	// with Retry-After, and a stream ends with an error event (0: DefaultMaxInFlightBytes). A
	// body or reply over half of it is never served: keep MaxBodyBytes and MaxReplyBytes at
	// most half of it.
	MaxInFlightBytes int64
	// ReadBodyTimeout bounds the time a client takes to send a request body, and
	// ReadBodyStall the time it may send none of it: a slower one, or one that stalls, is
	// answered 408, its connection closed and the cut logged (0: DefaultReadBodyTimeout,
	// DefaultReadBodyStall).
	ReadBodyTimeout time.Duration
	ReadBodyStall   time.Duration
	// ReadHeaderTimeout bounds the time a client takes to send a request's headers; a slower
	// one has its connection closed (0: the package's ReadHeaderTimeout).
	ReadHeaderTimeout time.Duration
	// MaxConns bounds the client connections open at once: at the bound, a new connection
	// closes the one that waited longest without a request in progress (see connCap). 0:
	// half of the process's limit of open files less 64, at least 16 (no bound where the
	// limit is not known); negative: no bound.
	MaxConns int
	// CacheBytes bounds what the proxy keeps of the threads between turns (each one's
	// history, active context with its encodings, and latest request: see liveState), least
	// recently used dropped first (0: DefaultCacheBytes); a thread unused for CacheIdle is
	// dropped (0: DefaultCacheIdle). The cache only saves reads: a dropped thread is read
	// again.
	CacheBytes int64
	CacheIdle  time.Duration
	// Logger receives one line per request and the outcome of background compactions; never a
	// header, a key or a message's text (nil: discarded).
	Logger *slog.Logger
	// Windows, when set, is token_limit auto: a thread that sets no token_limit of its own is
	// fitted in the window the upstream reports for the model of each request (read and
	// cached by Windows), scaled by the ratio of the upstream's token count to the local one
	// (measured from each reply's usage.prompt_tokens). Nil: the Compactor's token_limit.
	Windows *cascade.Windows
	// LoopbackOnly refuses requests whose Host is not a loopback name or address (a defence
	// against DNS rebinding when the server listens on loopback without a token).
	LoopbackOnly bool
	// Recall lets the model of a thread with compacted history search it (see recall.go).
	Recall bool
	// Notice adds, for the model, a note that the context will soon be compacted and one of
	// what a compaction did, each once (see Notice); off when Notice.Enabled is false.
	Notice Notice

	initOnce sync.Once
	id       string // this server's id in ViaHeader
	inflight budget
	conns    *connCap
	http     *http.Server
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bg       sync.WaitGroup

	calib calibration

	upstreamRung *upstreamRung // the summarizer's upstream rung, when UpstreamEntry made it

	toolCounts toolCounts // see countTools

	mu      sync.Mutex
	closing bool
	threads map[string]*threadState // the threads in use or cached (see threads.go)
	lru     list.List               // of *threadState, the most recently used first
	cached  int64                   // the bytes of what is kept of the threads

}

// MemoryHeadroom is what MemoryLimit allows beyond the server's bounds: the store, the
// tokenizers' tables, the garbage of the turns in flight.
const MemoryHeadroom = 64 << 20

// MemoryLimit is the soft memory limit (runtime/debug.SetMemoryLimit) that suits the server's
// bounds: the bytes in flight (MaxInFlightBytes) and the threads' state kept (CacheBytes) it
// holds at most, and MemoryHeadroom. Under it the garbage collector runs as the Go runtime's
// default (GOGC) has it; near it, sooner, so that what a burst of large requests left behind
// is collected and given back rather than grown over. memctl serve sets it unless GOMEMLIMIT is
// set.
func (s *Server) MemoryLimit() int64 {
	s.init()
	return s.MaxInFlightBytes + s.CacheBytes + MemoryHeadroom
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
		s.id = newServerID()
		s.threads = map[string]*threadState{}
		s.lru.Init()
		if s.CacheBytes <= 0 {
			s.CacheBytes = DefaultCacheBytes
		}
		if s.CacheIdle <= 0 {
			s.CacheIdle = DefaultCacheIdle
		}
		if s.Logger == nil {
			s.Logger = slog.New(slog.DiscardHandler)
		}
		if s.Client == nil {
			// Connections to the upstream are kept for as many agents as call at once: the
			// default transport keeps 2, and each request past them dialled anew.
			var rt http.RoundTripper = http.DefaultTransport
			if t, ok := rt.(*http.Transport); ok {
				t = t.Clone()
				t.MaxIdleConnsPerHost = UpstreamIdleConns
				rt = t
			}
			s.Client = &http.Client{Transport: rt}
		}
		if s.MaxBodyBytes <= 0 {
			s.MaxBodyBytes = DefaultMaxBodyBytes
		}
		if s.MaxReplyBytes <= 0 {
			s.MaxReplyBytes = DefaultMaxReplyBytes
		}
		if s.MaxSSEEventBytes <= 0 {
			s.MaxSSEEventBytes = DefaultMaxSSEEventBytes
		}
		if s.MaxInFlightBytes <= 0 {
			s.MaxInFlightBytes = DefaultMaxInFlightBytes
		}
		s.inflight.max = s.MaxInFlightBytes
		if s.ReadBodyTimeout <= 0 {
			s.ReadBodyTimeout = DefaultReadBodyTimeout
		}
		if s.ReadBodyStall <= 0 {
			s.ReadBodyStall = DefaultReadBodyStall
		}
		if s.MaxConns == 0 {
			s.MaxConns = defaultMaxConns()
		}
		s.conns = newConnCap(s.MaxConns)
		if s.ReadHeaderTimeout <= 0 {
			s.ReadHeaderTimeout = ReadHeaderTimeout
		}
		s.Upstream = UpstreamBase(s.Upstream)
	})
}

// UpstreamBase is an upstream's base URL as serve uses it, which each dialect's route follows
// (/chat/completions, /messages, /responses): a base of a host alone, as Anthropic's SDKs and
// llama.cpp's server take it (https://api.anthropic.com), gets /v1; a base with a path (.../v1,
// .../v1beta/openai) is used as it is. "" stays "".
func UpstreamBase(base string) string {
	base = strings.TrimRight(base, "/")
	if u, err := url.Parse(base); err == nil && u.Host != "" && u.Path == "" && u.RawQuery == "" {
		return base + "/v1"
	}
	return base
}

// Handler returns the server's handler: its routes behind the token check.
func (s *Server) Handler() http.Handler {
	s.init()
	mux := http.NewServeMux()
	s.routes(mux)
	return s.guard(mux)
}

// routes registers every route of the server.
func (s *Server) routes(mux *http.ServeMux) {
	for _, d := range dialects {
		for _, route := range d.Routes() {
			mux.HandleFunc("POST /t/{thread}/v1"+route, s.proxy(d))
			mux.HandleFunc("POST /v1"+route, s.proxy(d)) // the thread in ThreadHeader, or the dialect's own
		}
		for _, l := range d.Local() {
			mux.HandleFunc("POST /t/{thread}/v1"+l.Route, s.local(d, l.Kind))
			mux.HandleFunc("POST /v1"+l.Route, s.local(d, l.Kind))
		}
	}
	mux.HandleFunc("GET /t/{thread}/v1/models", s.models)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("/", s.notFound)
	mux.HandleFunc("GET /api/threads", s.apiThreads)
	mux.HandleFunc("GET /api/threads/{id}", s.apiThread)
	mux.HandleFunc("GET /api/threads/{id}/active", s.apiActive)
	mux.HandleFunc("GET /api/threads/{id}/reports", s.apiReports)
	mux.HandleFunc("POST /api/threads/{id}/compact", s.apiCompact)
	mux.HandleFunc("GET /api/reports/{id}", s.apiReport)
	mux.HandleFunc("GET /api/providers", s.apiProviders)
	mux.HandleFunc("GET /{$}", s.pageIndex)
	mux.HandleFunc("GET /threads/{id}", s.pageThread)
	mux.HandleFunc("GET /static/", s.static)
	mux.Handle("/mcp", s.mcpHandler())
	s.memoryRoutes(mux)
}

// guard checks the bearer token (when set) and the Host (LoopbackOnly), and logs the request.
func (s *Server) guard(next http.Handler) http.Handler {
	want := []byte(s.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			status := rec.status
			if status == 0 && r.Context().Err() == nil {
				status = http.StatusOK // the handler returned without an answer: net/http sends 200
			}
			if status == 0 {
				s.Logger.Info("request", "method", r.Method, "path", r.URL.Path, "status", 0,
					"outcome", "the client left before an answer", "ms", time.Since(start).Milliseconds())
				return
			}
			s.Logger.Info("request", "method", r.Method, "path", r.URL.Path, "status", status,
				"ms", time.Since(start).Milliseconds())
		}()
		if s.refuseLoop(rec, r) {
			return
		}
		if s.LoopbackOnly && !loopbackHost(r.Host) {
			writeCode(rec, CodeForbidden, "host_not_allowed",
				fmt.Sprintf("the Host %q is not a loopback name or address: this server answers loopback requests only", r.Host), "")
			return
		}
		if s.Token != "" {
			scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
				rec.Header().Set("WWW-Authenticate", `Bearer realm="memctl"`)
				writeCode(rec, CodeUnauthenticated, "invalid_api_key",
					"missing or wrong token: send the header Authorization: Bearer <token> (the value of the variable named by --token-env)", "")
				return
			}
			r.Header.Del("Authorization") // serve's own: no dialect forwards it upstream
		}
		if s.refuseCrossSite(rec, r) {
			return
		}
		next.ServeHTTP(rec, r)
	})
}

// statusRecorder remembers the status written (0: none yet), for the log; it passes Flush
// through.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Serve serves on ln until Shutdown; it returns nil after a graceful shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.init()
	s.mu.Lock()
	if s.http != nil {
		s.mu.Unlock()
		return errors.New("serve: the server is already serving")
	}
	s.http = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.Logger.Handler(), slog.LevelWarn),
	}
	if c := s.conns; c != nil {
		ln = capListener{ln, c}
		s.http.ConnState = c.state
		s.http.ConnContext = func(ctx context.Context, conn net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, conn)
		}
	}
	srv := s.http
	s.mu.Unlock()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting connections and waits for the requests in flight to finish (their
// replies are stored), then cancels the background compactions and waits for them: a
// cancelled compaction is recorded as failed, with the cancellation as its error. When ctx
// ends first, the remaining connections are closed and ctx's error returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.mu.Lock()
	s.closing = true
	srv := s.http
	s.mu.Unlock()
	var err error
	if srv != nil {
		if err = srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	}
	s.bgCancel()
	s.bg.Wait()
	return err
}

// IsLoopback reports whether a listen address (host:port) binds to loopback only: a loopback
// IP or "localhost". An empty host binds every interface, so it is not loopback.
func IsLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: want HOST:PORT: %v", addr, err)
	}
	return loopbackName(host), nil
}

func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether a request's Host header names loopback.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return loopbackName(strings.Trim(host, "[]"))
}
