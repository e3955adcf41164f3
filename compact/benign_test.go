package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/redact"
)

// benignValues are values an agent acts on that are no secret: digests, hashes, UUIDs,
// versions, commit ids and other ids. None may be redacted, and the offline summary must keep
// each one it summarized.
var benignValues = []string{
	"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", // an image digest
	"sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
	"sha512-Q1JqjqnWHKhBz3zd3ZArCqqeZbVN7u1GRqSRxrm3IaW8yEHnRHmjcq2gEvl5s6RWeWUCrfYxvNQ0yA2hwqcXbg==", // an npm integrity
	"d41d8cd98f00b204e9800998ecf8427e",                                                                // md5 of nothing
	"5d41402abc4b2a76b9719d911017c592",                                                                // md5 of hello
	"2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",                                                        // sha1
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",                                // sha256 of nothing
	"a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",                                                        // a commit id
	"3c8306b",                              // a short commit id
	"550e8400-e29b-41d4-a716-446655440000", // a UUID
	"f47ac10b-58cc-4372-a567-0e02b2c3d479",
	"v1.26.8",                            // a version
	"2.31.0",                             // semver
	"v0.0.0-20240515143000-a94a8fe5ccb1", // a Go pseudo-version
	"1.4.0-rc.2",
	"3.12.4",
	"ORD-2026-118734",             // an order id
	"BK-2026-118734",              // a booking id
	"req_8f3c2a1b9d",              // a request id
	"i-0a1b2c3d4e5f67890",         // an EC2 instance id
	"arn:aws:s3:::my-bucket-2026", // an ARN
	"pr-1867",
	"h1:4Xq3Zr8Tb6Wm2Lp9Nv5Ks1Yd7Fh0Jc3Ge8Ua2Ib6Oc=", // a go.sum hash
	"0x5a0b54d5dc17e0aadc383d2db43b0a0d3e029c4c",     // an address
	"CVE-2024-3094",
	"build #4821",
}

// TestBenignSurviveOfflineSummary: each benign value is kept by the redactor byte for byte and
// survives the offline summary of the conversation where an agent acted on it.
func TestBenignSurviveOfflineSummary(t *testing.T) {
	t.Parallel()
	r, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	redacted := 0
	for _, v := range benignValues {
		if out, _ := r.Redact("value: " + v); out != "value: "+v {
			redacted++
			t.Errorf("%q redacted: %q", v, out)
		}
	}
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := []chat.Message{chat.TextMessage("system", "You are a release assistant.")}
	for i, v := range benignValues {
		args, _ := json.Marshal(map[string]string{"ref": v})
		call := chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{
			{ID: fmt.Sprintf("call_%d", i), Type: "function", Function: chat.FunctionCall{Name: "verify", Arguments: string(args)}}}}
		res := chat.TextMessage("tool", fmt.Sprintf("verified %s: ok\n%s", v, strings.Repeat("step passed without warnings; ", 12)))
		res.ToolCallID = fmt.Sprintf("call_%d", i)
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("Please check release artifact %d, it is %s.", i, v)), call, res)
	}
	for i := range 6 {
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("recent question %d %s", i, strings.Repeat("word ", 40))))
	}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	casc := cascade.New(s.DB(), cascade.Entry{Name: "offline", Type: "extractive", Provider: extractive.Summarizer{}, Offline: true,
		MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	a, _ := s.Active(ctx, "t")
	var ledger []facts.Fact
	c := compact.NewWith(s, casc, compact.Settings{TokenLimit: a.Tokens * 2, TargetRatio: 0.05, SummaryMaxTokens: 4000},
		compact.Config{OnSummarized: func(_ context.Context, sp compact.Span) error { ledger = append(ledger, sp.Facts...); return nil }})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %+v, %v", rep, err)
	}
	if rep.Summary == nil {
		t.Fatal("no summary")
	}
	lost := 0
	for _, v := range benignValues {
		if !strings.Contains(*rep.Summary, v) {
			lost++
			t.Errorf("the offline summary lost %q", v)
		}
	}
	// The digests, hashes, UUIDs and versions are facts of their kind (a short commit id with
	// no word before it is not).
	for _, v := range slices.Concat(benignValues[:8], benignValues[9:16]) {
		if !slices.ContainsFunc(ledger, func(f facts.Fact) bool {
			return f.Text == v && (f.Kind == facts.KindDigest || f.Kind == facts.KindVersion || f.Kind == facts.KindID)
		}) {
			t.Errorf("%q is not a digest, version or id fact of the ledger", v)
		}
	}
	t.Logf("%d of %d benign values redacted, %d lost by the offline summary", redacted, len(benignValues), lost)
}
