package memory

import (
	"context"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/testdb"
)

// runningRow records a running compaction of thread "t" as process pid under owner would,
// with a lease until leaseUntil.
func runningRow(t *testing.T, s *Store, owner string, pid int, leaseUntil time.Time) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage(chat.RoleUser, "hi")}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	id, err := s.h.Q().InsertCompaction(ctx, db.InsertCompactionParams{
		ThreadID: "t", Status: string(StatusRunning), Reason: "forced", Strategy: "summarize",
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
	var later atomic.Bool // the store's clock runs 2 minutes ahead once set
	clock := func() time.Time {
		if later.Load() {
			return time.Now().Add(2 * time.Minute)
		}
		return time.Now()
	}
	s, err := Open(ctx, path, OpenOptions{Options: Options{Now: clock}})
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
	later.Store(true)
	if err := s.failInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Report(ctx, id); r.Status != StatusFailed || r.Error != "interrupted" {
		t.Fatalf("after the lease ran out: %s (%q)", r.Status, r.Error)
	}
	s.Close()
}

// TestOpenNowJudgesLeasesByIt: the clock given in the Options is set before the open's
// cleanup, which marks a running compaction interrupted only when its lease ran out by it.
func TestOpenNowJudgesLeasesByIt(t *testing.T) {
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
		s, err := Open(ctx, path, OpenOptions{Options: Options{Now: tc.now}})
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
