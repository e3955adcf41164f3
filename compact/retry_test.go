package compact_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// TestRetry: a model's refusal of a prompt as too long becomes an emergency compaction to the
// window the refusal names (scaled to the thread's count) or, when it names none, to 2/3 of
// the context; any other error compacts nothing; a refusal no compaction can cure says so and
// asks for no retry.
func TestRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 100_000, Strategy: compact.StrategySummarize})
	active := func(thread string) int {
		t.Helper()
		a, err := s.Active(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		return a.Tokens
	}

	storetest.LongThread(t, s, "t", 60, 400)
	before := active("t")
	for _, err := range []error{
		errors.New("connection reset"),
		&openai.APIError{HTTPStatusCode: 429, Message: "rate limited", Code: "rate_limit_exceeded"},
		&openai.APIError{HTTPStatusCode: 401, Message: "bad key"},
	} {
		retry, rep, rerr := c.Retry(ctx, "t", err)
		if retry || rerr != nil || rep.ID != 0 {
			t.Fatalf("Retry(%v) = %v, %+v, %v: want no compaction", err, retry, rep, rerr)
		}
	}
	if reps, _ := s.Reports(ctx, "t", 10); len(reps) != 0 || active("t") != before {
		t.Fatalf("after errors that are no refusal: %d reports, %d tokens (was %d)", len(reps), active("t"), before)
	}

	// vLLM's words: a window of 4,000 by a count that makes the context 9,000 tokens.
	refusal := &openai.APIError{HTTPStatusCode: 400, Code: "context_length_exceeded",
		Message: fmt.Sprintf("This model's maximum context length is 4000 tokens. However, you requested %d tokens.", before*3/2)}
	retry, rep, err := c.Retry(ctx, "t", refusal)
	want := 4000 * before / (before * 3 / 2)
	if err != nil || !retry || rep.Reason != compact.ReasonEmergency || rep.Status != memory.StatusApplied {
		t.Fatalf("Retry(refusal) = %v, %+v, %v", retry, rep, err)
	}
	if got := active("t"); got > want || rep.TokenLimit > want {
		t.Fatalf("after the refusal: %d tokens, limit %d; want at most %d (4,000 in the server's count)", got, rep.TokenLimit, want)
	}

	// No window named: 2/3 of the context.
	storetest.LongThread2(t, s, "t", 40, 400)
	before = active("t")
	retry, rep, err = c.Retry(ctx, "t", fmt.Errorf("the model said: %w", llm.ErrContextLength))
	if err != nil || !retry || active("t") > before*2/3 {
		t.Fatalf("Retry(ErrContextLength) = %v, %+v, %v: %d tokens of %d", retry, rep, err, active("t"), before)
	}

	// The newest message alone is over any smaller limit: nothing to retry.
	if _, err := s.Append(ctx, "u", []chat.Message{chat.TextMessage(chat.RoleUser, strings.Repeat("huge request ", 3000))}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	retry, rep, err = c.Retry(ctx, "u", refusal)
	if retry || rep.Status == memory.StatusApplied {
		t.Fatalf("Retry of a thread no compaction can shrink = %v, %+v, %v", retry, rep, err)
	}
	t.Logf("a thread no compaction can shrink: %s %s %s %v", rep.Status, rep.Detail, rep.Error, err)
}
