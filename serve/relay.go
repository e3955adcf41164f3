package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
)

// relay calls the upstream and passes its answer to the client, storing the reply once it is
// complete, before the client sees the end of the answer: a client that reads the whole
// answer finds the reply stored. A stored reply schedules a background compaction check.
//
// sent is the prompt's size counted here: the prompt tokens of the reply's usage calibrate
// the model's ratio against it. With retry set, an answer that the prompt is too long (the
// dialect's TooLong) is not passed on: refused is its body (the head read), nil otherwise.
func (s *Server) relay(w http.ResponseWriter, r *http.Request, d dialect.Dialect, thread string, req dialect.Turn, body []byte, sent int, retry bool) (ok bool, refused []byte) {
	ctx, stream := r.Context(), req.Stream
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Upstream, bytes.NewReader(body))
	if err != nil {
		writeCodeIn(w, d, CodeUpstream, "upstream_unreachable", "upstream: "+err.Error(), "")
		return false, nil
	}
	up.URL = up.URL.JoinPath(d.Upstream(req, up, r, s.UpstreamKey))
	s.markUpstream(up, r)
	resp, err := s.Client.Do(up)
	if err != nil {
		if ctx.Err() == nil {
			writeCodeIn(w, d, CodeUpstream, "upstream_unreachable", "cannot reach the upstream model: "+redactURLError(err), "")
		}
		return false, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorHead))
		if retry && d.TooLong(resp.StatusCode, b) {
			return false, b
		}
		// The upstream's error, as it gave it: status and body.
		copyHeaders(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		w.Write(b)
		io.Copy(w, io.LimitReader(resp.Body, s.MaxReplyBytes-int64(len(b))))
		return false, nil
	}
	copyHeaders(w.Header(), resp.Header)
	calibrate := func(u dialect.Usage) {
		if r, ok := s.calib.record(req.Model, u.PromptTokens, sent); ok {
			s.Logger.Debug("token count calibrated", "model", req.Model, "upstream", u.PromptTokens, "local", sent, "ratio", r)
		}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if stream && mt == "text/event-stream" {
		return s.relayStream(w, r, d, thread, resp.Body, calibrate), nil
	}
	return s.relayJSON(w, r, d, thread, resp.Body, calibrate), nil
}

// storeReply appends the proxy's messages of a turn (the model's reply, a recall's call and
// results) to the thread the caller holds the turn of, whatever it holds by now, with what
// the upstream reported of the prompt (the zero Usage: nothing reported).
func (s *Server) storeReply(ctx context.Context, thread string, msgs []chat.Message, u dialect.Usage) (memory.AppendResult, error) {
	var opt memory.AppendOptions
	if u.PromptTokens > 0 {
		// An upstream's counts are data: the cached part is kept within 0 and the prompt.
		opt.Reply = &memory.ReplyUsage{PromptTokens: u.PromptTokens, CachedTokens: min(max(u.CachedTokens, 0), u.PromptTokens)}
		if p := s.UpstreamPrice; p != nil {
			cost := float64(p.Micros(u.PromptTokens, max(u.CompletionTokens, 0))) / 1e6
			opt.Reply.Cost = &cost
		}
	}
	return s.appendLive(ctx, s.state(thread), msgs, opt, nil)
}

// maxErrorHead is how much of an upstream's error answer is read to classify it; the rest is
// passed on as it comes.
const maxErrorHead = 64 << 10

// redactURLError drops the URL from a transport error: the upstream URL may carry a key in
// its query.
func redactURLError(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		return ue.Unwrap().Error()
	}
	return err.Error()
}

// hopHeaders are response headers never passed to the client.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Transfer-Encoding": true, "Content-Length": true,
	"Set-Cookie": true, "Trailer": true, "Upgrade": true, "Proxy-Authenticate": true,
}

func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		if hopHeaders[k] || strings.HasPrefix(k, "Access-Control-") {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}

func (s *Server) relayJSON(w http.ResponseWriter, r *http.Request, d dialect.Dialect, thread string, body io.Reader, calibrate func(dialect.Usage)) bool {
	b, free, err := s.readAll(io.LimitReader(body, s.MaxReplyBytes+1), -1)
	if err == nil {
		// The reply's messages, read out of it, count as much again (see holdParse).
		var ok bool
		if free, ok = s.holdParse(b, free); !ok {
			free, err = func() {}, errBusy
		}
	}
	defer free()
	if errors.Is(err, errBusy) {
		w.Header().Del("Content-Type")
		busy(w, d)
		return false
	}
	if err != nil || int64(len(b)) > s.MaxReplyBytes {
		w.Header().Del("Content-Type")
		msg := fmt.Sprintf("the upstream's reply is over %d bytes", s.MaxReplyBytes)
		if err != nil {
			msg = "reading the upstream's reply: " + err.Error()
		}
		writeCodeIn(w, d, CodeUpstream, "bad_upstream_reply", msg, "")
		return false
	}
	reply, usage, err := d.Reply(b)
	if err != nil {
		writeCodeIn(w, d, CodeUpstream, "bad_upstream_reply", err.Error(), "")
		return false
	}
	calibrate(usage)
	if r.Context().Err() != nil {
		return false // the client left: it never sees this reply, so it is not stored
	}
	if _, err := s.storeReply(context.WithoutCancel(r.Context()), thread, reply, usage); err != nil {
		writeCodeIn(w, d, CodeUpstream, "reply_not_stored", "the model's reply could not be stored: "+err.Error(), "")
		return false
	}
	s.compactLater(thread)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return true
}
