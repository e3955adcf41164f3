package memory

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/testdb"
)

// runningRow records a running compaction of thread "t" as process pid under owner would,
// with a lease until leaseUntil.
func runningRow(t *testing.T, s *Store, owner string, pid int, leaseUntil time.Time) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Append(ctx, "t", []Message{TextMessage(RoleUser, "hi")}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	id, err := s.h.Q().InsertCompaction(ctx, db.InsertCompactionParams{
		ThreadID: "t", Status: string(StatusRunning), Reason: string(ReasonForced), Strategy: StrategySummarize,
		LastSeq: 1, TokenLimit: 1000, OwnerHost: owner, OwnerPid: int64(pid),
		LeaseUntil: leaseUntil.UnixMilli(), CreatedAt: 1, UpdatedAt: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// deadPID returns the id of a process that has exited.
func deadPID(t *testing.T) int {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = testdb.Environ()
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestRecoveryReadsLeases: at open, a running compaction is interrupted when its lease
// expired, whoever wrote it; a row of another host or process namespace holding a valid
// lease is left running although its process id means nothing here; a row of this very boot
// and namespace whose process is gone is interrupted at once.
func TestRecoveryReadsLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name        string
		owner       string
		lease       time.Duration // from now
		interrupted bool
	}{
		{"other namespace, valid lease", "pod-b 1c2d3e4f-boot pid:[4026532999]", time.Minute, false},
		{"other host, expired lease", "host-x 9a8b-boot pid:[4026531836]", -time.Second, true},
		{"this namespace, process gone", owner(), time.Minute, owner() != ""},
		{"no owner recorded, valid lease", "", time.Minute, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := testdb.Name(t, "m.db")
			s, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			id := runningRow(t, s, tc.owner, deadPID(t), time.Now().Add(tc.lease))
			s.Close()
			s, err = Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r, err := s.Report(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			got := r.Status == StatusFailed && r.Error == "interrupted"
			if got != tc.interrupted || (!got && r.Status != StatusRunning) {
				t.Fatalf("after open: %s (%q), want interrupted=%v", r.Status, r.Error, tc.interrupted)
			}
			if got && (r.TokensAfter != r.TokensBefore || r.MessagesAfter != r.MessagesBefore) {
				t.Fatalf("interrupted report: tokens %d -> %d", r.TokensBefore, r.TokensAfter)
			}
		})
	}
}

// TestRecoveryLeaseExpiresLater: a row left valid at one open is interrupted at a later open
// once its lease ran out (a crashed compaction of another host does not stay running forever).
func TestRecoveryLeaseExpiresLater(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testdb.Name(t, "m.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	id := runningRow(t, s, "elsewhere boot pid:[1]", 1, time.Now().Add(time.Minute))
	if err := s.failInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Report(ctx, id); r.Status != StatusRunning {
		t.Fatalf("with a valid lease: %s", r.Status)
	}
	s.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if err := s.failInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Report(ctx, id); r.Status != StatusFailed || r.Error != "interrupted" {
		t.Fatalf("after the lease ran out: %s (%q)", r.Status, r.Error)
	}
	s.Close()
}

// TestCommitRefusesUnreportedLoss: the facts check at commit refuses a summary that misses a
// fact of its ledger without naming it in facts_dropped, before anything is written.
func TestCommitRefusesUnreportedLoss(t *testing.T) {
	t.Parallel()
	ledger := []facts.Fact{{Kind: facts.KindID, Text: "ZQ9XYZ", Weight: 50}, {Kind: facts.KindAmount, Text: "$400", Weight: 30}}
	s, err := Open(context.Background(), testdb.Name(t, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j := &job{c: &Compactor{Store: s}, id: 1, rep: &Report{}}
	sum := summary{text: "Summary: the budget is $400.", facts: ledger}
	err = j.applySummary(context.Background(), Active{}, Plan{}, sum, Active{})
	if !errors.Is(err, ErrFactsLost) || !strings.Contains(err.Error(), "ZQ9XYZ") {
		t.Fatalf("applySummary: %v, want ErrFactsLost naming ZQ9XYZ", err)
	}
	sum.dropped = ledger[:1]
	sum.text = "Summary: the budget is 400 dollars." // "$400" is matched by number: still there
	err = j.applySummary(context.Background(), Active{}, Plan{}, sum, Active{})
	if errors.Is(err, ErrFactsLost) {
		t.Fatalf("applySummary refused a summary whose only missing fact is reported dropped: %v", err)
	}
}

// TestOpenWithNowJudgesLeasesByIt: the clock given in OpenOptions is set before the open's
// cleanup, which marks a running compaction interrupted only when its lease ran out by it.
func TestOpenWithNowJudgesLeasesByIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testdb.Name(t, "m.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	id := runningRow(t, s, "elsewhere boot pid:[1]", 1, time.Now().Add(time.Minute))
	s.Close()
	for _, tc := range []struct {
		now  func() time.Time
		want Status
	}{
		{nil, StatusRunning},
		{func() time.Time { return time.Now().Add(-time.Hour) }, StatusRunning},
		{func() time.Time { return time.Now().Add(2 * time.Minute) }, StatusFailed},
	} {
		s, err := OpenWith(ctx, path, OpenOptions{Now: tc.now})
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Report(ctx, id)
		s.Close()
		if err != nil || r.Status != tc.want {
			t.Fatalf("open with clock %v: status %s (%v), want %s", tc.now != nil, r.Status, err, tc.want)
		}
	}
}

// TestCommitSeesMaskedResultFacts: the commit check of a summary over a masked result runs
// against the facts of the result's original that its placeholder shows. The digest writes the
// price as a bare number, which its text alone does not show as an amount: a summary that
// leaves it out, unreported, is refused.
func TestCommitSeesMaskedResultFacts(t *testing.T) {
	t.Parallel()
	counter, err := NewTokenCounter(EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	sh := shaper{count: counter, redact: func(s string) string { return s }}
	call := TextMessage(RoleAssistant, "")
	call.Content = nil
	call.ToolCalls = []ToolCall{{ID: "c1", Type: "function", Function: FunctionCall{Name: "get_reservation_details", Arguments: `{"reservation_id": "ZQ9XYZ"}`}}}
	result := TextMessage(RoleTool, `{"reservation_id": "ZQ9XYZ", "flights": [{"flight_number": "HAT084", "price": 1505}], "note": "`+strings.Repeat("a long remark ", 40)+`"}`)
	result.ToolCallID = "c1"
	es := []Entry{{Seq: 1, Message: call, Tokens: counter.CountMessage(call)}, {Seq: 2, Message: result, Tokens: counter.CountMessage(result)}}
	masked := sh.mask(es, 0, 2)
	if masked[1].Mark() == nil || masked[1].Mark().Masked == nil || !strings.Contains(masked[1].Mark().Masked.Digest, "1505") {
		t.Fatalf("the result is not masked with the price in its digest: %q", masked[1].Text())
	}
	ledger := entryFacts(masked, nil, sh.redact, false)
	if !slices.ContainsFunc(ledger, func(f facts.Fact) bool { return f.Kind == facts.KindAmount && f.Text == "1505" }) {
		t.Fatalf("the ledger of the masked result lacks the amount 1505 its digest shows: %+v", ledger)
	}
	s, err := Open(context.Background(), testdb.Name(t, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j := &job{c: &Compactor{Store: s}, id: 1, rep: &Report{}}
	var text strings.Builder
	for _, f := range ledger {
		if f.Text != "1505" {
			text.WriteString("- " + f.Text + "\n")
		}
	}
	err = j.applySummary(context.Background(), Active{}, Plan{}, summary{text: text.String(), facts: ledger}, Active{})
	if !errors.Is(err, ErrFactsLost) || !strings.Contains(err.Error(), "1505") {
		t.Fatalf("applySummary: %v, want ErrFactsLost naming 1505", err)
	}
}
