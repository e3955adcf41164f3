package cascade_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
)

// retargeted is a provider whose entry of each run is chosen by target: none (passed over), or
// the entry with the Fake to answer and a model of the run's.
type retargeted struct {
	target func(ctx context.Context) (model string, ok bool)
	fake   *cascade.Fake
}

func (r *retargeted) Complete(context.Context, llm.Request) (llm.Response, error) {
	panic("a Retargeter's own Complete is never called by the cascade")
}

func (r *retargeted) Retarget(ctx context.Context, _ int64, e cascade.Entry) (cascade.Entry, bool) {
	model, ok := r.target(ctx)
	if !ok {
		return e, false
	}
	e.Name, e.Model, e.Provider = "renamed", model, r.fake
	return e, true
}

// TestRetarget: a Retargeter's entry of a run answers under the entry's name with the model of
// the run (the result, the attempt row); a run it has no target for passes it over without a
// request, an attempt row or a cooldown, and the next rung answers.
func TestRetarget(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	up := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Text: "from the upstream"}, nil
	}}
	type runKey struct{}
	rt := &retargeted{fake: up, target: func(ctx context.Context) (string, bool) {
		return "model-of-run-7", ctx.Value(runKey{}) == 7
	}}
	offline := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Text: "from offline"}, nil
	}}
	h := newHarness(t, sqldb, cascade.Entry{Name: "upstream", Type: "upstream", Provider: rt},
		cascade.Entry{Name: "offline", Type: "fake", Provider: offline})

	res, err := h.c.Complete(context.WithValue(context.Background(), runKey{}, 7), 0, llm.Request{})
	if err != nil || res.Text != "from the upstream" || res.Provider != "upstream" || res.Model != "model-of-run-7" {
		t.Fatalf("run 7 = %+v, %v; want the upstream's answer, named upstream, model-of-run-7", res, err)
	}
	res, err = h.c.Complete(context.WithValue(context.Background(), runKey{}, 8), 0, llm.Request{})
	if err != nil || res.Text != "from offline" || res.Provider != "offline" {
		t.Fatalf("run 8 = %+v, %v; want offline's answer", res, err)
	}
	if n := len(up.Calls()); n != 1 {
		t.Fatalf("the upstream got %d requests, want 1 (none for the run it had no target for)", n)
	}
	rows := attempts(t, sqldb)
	if len(rows) != 2 || rows[0].Provider != "upstream" || rows[0].Model != "model-of-run-7" || rows[1].Provider != "offline" {
		t.Fatalf("attempts = %+v; want upstream (model-of-run-7), then offline alone", rows)
	}
	if row, ok := cooldown(t, sqldb, "upstream"); ok && row.CoolingUntil > h.clock().UnixMilli() {
		t.Fatalf("the upstream cools down after a run it was passed over: %+v", row)
	}
}

// TestHTTPError: an error answer of a server from outside the package is classified as
// ClassifyHTTP classifies it, Anthropic's shape too, with its Retry-After.
func TestHTTPError(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status int
		body   string
		want   cascade.Class
	}{
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, cascade.ClassContextLength},
		{429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, cascade.ClassRateLimited},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, cascade.ClassServer},
		{401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, cascade.ClassAuth},
		{400, `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`, cascade.ClassContextLength},
		{500, `not json`, cascade.ClassServer},
	} {
		h := http.Header{"Retry-After": {"3"}}
		pe := cascade.HTTPError(c.status, h, []byte(c.body), nil)
		if pe.Class != c.want || pe.HTTPStatus != c.status || pe.RetryAfter.Seconds() != 3 {
			t.Errorf("HTTPError(%d, %s) = %s, %d, %v; want %s, %d, 3s", c.status, c.body, pe.Class, pe.HTTPStatus, pe.RetryAfter, c.want, c.status)
		}
	}
}
