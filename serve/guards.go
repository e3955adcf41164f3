package serve

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// ViaHeader lists the memctl servers a request went through: every request a server sends
// its upstream carries the ids of the request it answers, then its own. A request that
// already holds the server's own id came back to it (its --upstream points at itself,
// directly or through other proxies): it is refused with 508 Loop Detected, since the server
// would otherwise wait on itself and copy the thread's messages into another thread.
const ViaHeader = "X-Memctl-Via"

// newServerID returns a random id for this server's ViaHeader.
func newServerID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// via returns the ids of ViaHeader in r.
func via(r *http.Request) []string {
	var ids []string
	for _, v := range r.Header.Values(ViaHeader) {
		for id := range strings.SplitSeq(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// markUpstream sets the ViaHeader of a request to the upstream sent to answer r.
func (s *Server) markUpstream(up, r *http.Request) {
	up.Header.Set(ViaHeader, strings.Join(append(via(r), s.id), ", "))
}

// refuseLoop answers 508 a request that came from this server, and reports whether it did.
func (s *Server) refuseLoop(w http.ResponseWriter, r *http.Request) bool {
	if !slices.Contains(via(r), s.id) {
		return false
	}
	s.Logger.Warn("request refused: it came from this server (a loop)", "method", r.Method, "path", r.URL.Path)
	writeCode(w, CodeLoop, "loop_detected",
		"this request was sent by this memctl serve itself: its --upstream points back at it (directly or through another proxy); refused, since it would wait on itself. Point --upstream at the model's server", "")
	return true
}

// refuseCrossSite answers 403 (or 415) a state-changing request to the API that a page of
// another site may have sent, token or not, and reports whether it did. Such a request needs
// Content-Type: application/json (which a page can send elsewhere only after a CORS preflight
// this server never grants); it must not come from another origin (Origin) nor from another
// site or origin as the browser says (Sec-Fetch-Site other than same-origin or none).
func (s *Server) refuseCrossSite(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions || !strings.HasPrefix(r.URL.Path, "/api/") {
		return false
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		writeCode(w, CodeForbidden, "cross_site_request",
			fmt.Sprintf("refused: the browser says this request comes from another site or origin (Sec-Fetch-Site: %s)", site), "")
		return true
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			writeCode(w, CodeForbidden, "cross_site_request",
				fmt.Sprintf("refused: the request comes from the origin %q, not from this server (%s)", origin, r.Host), "")
			return true
		}
	}
	if !isJSON(r) {
		writeCode(w, CodeUnsupported, "unsupported_media_type",
			"a request that changes state must be sent with Content-Type: application/json (its body may be empty)", "")
		return true
	}
	return false
}
