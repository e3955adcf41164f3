package serve

import (
	"fmt"
	"io"
	"net/http"

	"github.com/memcascade/memcascade/memory"
)

// Headers of the OpenAI endpoint conventions.
const (
	// ThreadHeader names the thread of a POST /v1/chat/completions, for clients that cannot
	// put it in the path (/t/THREAD/v1).
	ThreadHeader = "X-Memctl-Thread"
	// CompactionHeader is set on an answer before which a compaction of the thread ran (an
	// emergency one, to fit the limit): its id; CompactionStatusHeader is its status.
	CompactionHeader       = "X-Memctl-Compaction"
	CompactionStatusHeader = "X-Memctl-Compaction-Status"
)

// models passes GET /v1/models (and /t/{thread}/v1/models) to the upstream: its status and
// body as it gave them.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if s.Upstream == "" {
		writeCode(w, memory.CodeUnavailable, "no_upstream",
			"no upstream model is configured: start memctl serve with --upstream URL (ending in /v1)", "")
		return
	}
	up, err := http.NewRequestWithContext(r.Context(), http.MethodGet, s.Upstream+"/models", nil)
	if err != nil {
		writeCode(w, CodeUpstream, "upstream_unreachable", "upstream: "+err.Error(), "")
		return
	}
	up.Header.Set("Accept", "application/json")
	if s.UpstreamKey != "" {
		up.Header.Set("Authorization", "Bearer "+s.UpstreamKey)
	}
	resp, err := s.Client.Do(up)
	if err != nil {
		if r.Context().Err() == nil {
			writeCode(w, CodeUpstream, "upstream_unreachable", "cannot reach the upstream model: "+redactURLError(err), "")
		}
		return
	}
	defer resp.Body.Close()
	copyHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, io.LimitReader(resp.Body, s.MaxReplyBytes))
}

// notFound answers a route the server does not have, in OpenAI's error shape, naming the base
// URL an agent should use.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeCode(w, CodeNoRoute, "unknown_route",
		fmt.Sprintf("no route %s %s: set the client's base URL to http://%s/t/THREAD/v1 (THREAD names the conversation; or use /v1 with the header %s: THREAD), which serves POST /chat/completions and GET /models",
			r.Method, r.URL.Path, r.Host, ThreadHeader), "")
}
