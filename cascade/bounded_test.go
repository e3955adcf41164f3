package cascade_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
)

// countingTransport counts the response body bytes the client actually reads.
type countingTransport struct {
	read atomic.Int64
}

func (ct *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if resp != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &ct.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// TestOversizedResponseIsCut: a server streaming a 50 MB body for a 256-token request is
// cut at 16 bytes per requested token plus 64 KiB, classed bad_response, and the client
// reads no more than that bound (plus one read's slack) from the connection.
func TestOversizedResponseIsCut(t *testing.T) {
	t.Parallel()
	const total = 50 << 20
	var written atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`)
		chunk := strings.Repeat("a", 32<<10)
		for written.Load() < total {
			n, err := io.WriteString(w, chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
		io.WriteString(w, `"}}]}`)
	})
	ct := &countingTransport{}
	sqldb, _ := openDB(t)
	e := openAIEntry("big", srv.URL, func(cfg *cascade.OpenAIConfig, e *cascade.Entry) {
		cfg.HTTPClient = &http.Client{Transport: ct}
		e.MaxAttempts = 1
	})
	h := newHarness(t, sqldb, e)
	_, err := h.c.Complete(context.Background(), 0, llm.Request{Messages: userReq.Messages, MaxTokens: 256})
	causes := providerErrors(t, err)
	if len(causes) != 1 || causes[0].Class != cascade.ClassBadResponse || !strings.Contains(causes[0].Error(), "larger than") {
		t.Fatalf("causes = %v, want one bad_response saying the response is too large", causes)
	}
	const bound = 256*16 + 64<<10
	t.Logf("bound %d bytes; client read %d, server wrote %d of %d", bound, ct.read.Load(), written.Load(), total)
	if got := ct.read.Load(); got > bound+64<<10 {
		t.Errorf("read %d bytes of the response, want at most the bound %d plus 64 KiB", got, bound)
	}
	if got := written.Load(); got >= total {
		t.Errorf("the server wrote the whole %d bytes: the client kept reading", got)
	}
	rows := attempts(t, sqldb)
	if len(rows) != 1 || cascade.Class(rows[0].ErrorClass) != cascade.ClassBadResponse || rows[0].HTTPStatus != 200 {
		t.Errorf("rows = %+v, want one bad_response of HTTP 200", rows)
	}
}
