package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
)

// upstreamBody is the request as the agent sent it, its members in its order, with the active
// context as its messages, written from their kept encodings.
func (s *Server) upstreamBody(req chatRequest, lv *liveState) ([]byte, error) {
	n := 64 + len(req.fields)*8
	for k, v := range req.fields {
		if k != "messages" {
			n += len(k) + len(v)
		}
	}
	for _, e := range lv.enc {
		n += len(e) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	first := true
	member := func(k string, v []byte) {
		if !first {
			b = append(b, ',')
		}
		first = false
		key, _ := json.Marshal(k) // a string always marshals
		b = append(append(b, key...), ':')
		b = append(b, v...)
	}
	written := map[string]bool{}
	keys := append(slices.Clone(req.order), "messages")
	for k := range req.fields {
		if !slices.Contains(keys, k) {
			keys = append(keys, k) // added by the proxy (recall)
		}
	}
	for _, k := range keys {
		v, ok := req.fields[k]
		if written[k] || !ok && k != "messages" {
			continue
		}
		written[k] = true
		if k != "messages" {
			member(k, v)
			continue
		}
		member(k, nil)
		b = append(b, '[')
		for i, e := range lv.enc {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, e...)
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// relay calls the upstream and passes its answer to the client, storing the reply once it is
// complete, before the client sees the end of the answer: a client that reads the whole
// answer finds the reply stored. A stored reply schedules a background compaction check.
//
// sent is the prompt's size counted here: the reply's usage.prompt_tokens calibrates the
// model's ratio against it. With retry set, an answer that the prompt is too long (classified
// as the cascade classifies a provider's) is not passed on: tooLong reports it.
func (s *Server) relay(w http.ResponseWriter, r *http.Request, thread string, req chatRequest, body []byte, sent int, retry bool) (ok, tooLong bool) {
	ctx, stream := r.Context(), req.stream
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Upstream+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		writeCode(w, CodeUpstream, "upstream_unreachable", "upstream: "+err.Error(), "")
		return false, false
	}
	up.Header.Set("Content-Type", "application/json")
	s.markUpstream(up, r)
	if stream {
		up.Header.Set("Accept", "text/event-stream")
	} else {
		up.Header.Set("Accept", "application/json")
	}
	if s.UpstreamKey != "" {
		up.Header.Set("Authorization", "Bearer "+s.UpstreamKey)
	}
	resp, err := s.Client.Do(up)
	if err != nil {
		if ctx.Err() == nil {
			writeCode(w, CodeUpstream, "upstream_unreachable", "cannot reach the upstream model: "+redactURLError(err), "")
		}
		return false, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorHead))
		if retry && cascade.ClassifyHTTP(resp.StatusCode, b) == cascade.ClassContextLength {
			return false, true
		}
		// The upstream's error, as it gave it: status and body.
		copyHeaders(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		w.Write(b)
		io.Copy(w, io.LimitReader(resp.Body, s.MaxReplyBytes-int64(len(b))))
		return false, false
	}
	copyHeaders(w.Header(), resp.Header)
	calibrate := func(upstream int) {
		if r, ok := s.calib.record(req.model, upstream, sent); ok {
			s.Logger.Debug("token count calibrated", "model", req.model, "upstream", upstream, "local", sent, "ratio", r)
		}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if stream && mt == "text/event-stream" {
		return s.relayStream(w, r, thread, resp.Body, calibrate), false
	}
	return s.relayJSON(w, r, thread, resp.Body, calibrate), false
}

// storeReply appends the proxy's messages of a turn (the model's reply, a recall's call and
// results) to the thread the caller holds the turn of, whatever it holds by now.
func (s *Server) storeReply(ctx context.Context, thread string, msgs []chat.Message) (memory.AppendResult, error) {
	return s.appendLive(ctx, s.state(thread), msgs, memory.AppendOptions{}, nil)
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

func (s *Server) relayJSON(w http.ResponseWriter, r *http.Request, thread string, body io.Reader, calibrate func(int)) bool {
	b, free, err := s.readAll(io.LimitReader(body, s.MaxReplyBytes+1), -1)
	defer free()
	if errors.Is(err, errBusy) {
		w.Header().Del("Content-Type")
		busy(w)
		return false
	}
	if err != nil || int64(len(b)) > s.MaxReplyBytes {
		w.Header().Del("Content-Type")
		msg := fmt.Sprintf("the upstream's reply is over %d bytes", s.MaxReplyBytes)
		if err != nil {
			msg = "reading the upstream's reply: " + err.Error()
		}
		writeCode(w, CodeUpstream, "bad_upstream_reply", msg, "")
		return false
	}
	reply, err := replyMessage(b)
	if err != nil {
		writeCode(w, CodeUpstream, "bad_upstream_reply", err.Error(), "")
		return false
	}
	calibrate(promptTokens(b))
	if r.Context().Err() != nil {
		return false // the client left: it never sees this reply, so it is not stored
	}
	if _, err := s.storeReply(context.WithoutCancel(r.Context()), thread, []chat.Message{reply}); err != nil {
		writeCode(w, CodeUpstream, "reply_not_stored", "the model's reply could not be stored: "+err.Error(), "")
		return false
	}
	s.compactLater(thread)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return true
}

// replyMessage returns choices[0].message of a chat completion.
func replyMessage(b []byte) (chat.Message, error) {
	var resp struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return chat.Message{}, fmt.Errorf("the upstream's reply is not a chat completion: %v", err)
	}
	if len(resp.Choices) == 0 || len(resp.Choices[0].Message) == 0 {
		return chat.Message{}, errors.New("the upstream's reply has no choices[0].message")
	}
	var m chat.Message
	if err := json.Unmarshal(resp.Choices[0].Message, &m); err != nil {
		return chat.Message{}, fmt.Errorf("the upstream's reply: choices[0].message: %v", err)
	}
	if m.Role == "" {
		m.Role = chat.RoleAssistant
	}
	return m, nil
}
