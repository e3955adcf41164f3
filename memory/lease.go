package memory

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/memcascade/memcascade/db"
)

// defaultLease is how long a running compaction's lease lasts unless Options.Lease says
// otherwise; it is renewed every third of that while the compaction works.
const defaultLease = 30 * time.Second

// A running compaction holds a lease: its row's lease_until, renewed while it works. At open,
// a running row whose lease expired is marked failed (interrupted), whatever host or process
// namespace wrote it; a row whose lease is still valid belongs to a live compaction, perhaps in
// another container or on another host, and is left alone. One shortcut: a row written from
// this very machine boot and process namespace whose process no longer exists is interrupted
// at once, without waiting for its lease (process ids mean nothing across namespaces, hosts or
// reboots, so the shortcut is taken only when all three match).

// owner identifies the process namespace of this process: host name, boot id and PID
// namespace. "" where the platform does not tell them (then only leases count).
var owner = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	boot, err1 := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, err2 := os.Readlink("/proc/self/ns/pid")
	if host == "" || err1 != nil || err2 != nil {
		return ""
	}
	return host + " " + strings.TrimSpace(string(boot)) + " " + ns
})

func (s *Store) lease() time.Duration {
	if s.leaseFor > 0 {
		return s.leaseFor
	}
	return defaultLease
}

// Hold renews the lease of compaction id every third of the store's lease (Options.Lease) until stop is called.
func (c Compactions) Hold(ctx context.Context, id int64) (stop func()) {
	s := c.s
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.lease() / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				until := s.clock().Add(s.lease()).UnixMilli()
				// A failed renewal is retried at the next tick; if the lease runs out meanwhile
				// the row may be marked interrupted, and the commit then fails cleanly.
				_ = s.h.WithTx(ctx, func(q db.Querier) error {
					_, err := q.RenewLease(ctx, db.RenewLeaseParams{LeaseUntil: until, ID: id})
					return err
				})
			}
		}
	}()
	return func() { cancel(); <-done }
}

// failInterrupted marks failed (interrupted) every running compaction whose lease expired, or
// whose process is gone from this machine boot and process namespace.
func (s *Store) failInterrupted(ctx context.Context) error {
	running, err := s.h.Q().ListRunningCompactions(ctx)
	if err != nil {
		return err
	}
	now := s.now()
	me := owner()
	var gone []db.MarkInterruptedParams
	byID := map[int64]db.Compaction{}
	for _, c := range running {
		byID[c.ID] = c
		// The statement checks the lease again (a compaction may renew it meanwhile); for a
		// process known dead, any lease it holds counts as expired.
		p := db.MarkInterruptedParams{UpdatedAt: now, ID: c.ID, Now: now}
		if me != "" && c.OwnerHost == me && !processAlive(int(c.OwnerPid)) {
			p.Now = max(now, c.LeaseUntil+1)
		}
		if c.LeaseUntil < p.Now {
			gone = append(gone, p)
		}
	}
	if len(gone) == 0 {
		return nil // no write lock: a compaction running elsewhere is no reason to wait
	}
	var marked []int64
	err = s.h.WithTx(ctx, func(q db.Querier) error {
		marked = marked[:0]
		for _, p := range gone {
			n, err := q.MarkInterrupted(ctx, p)
			if err != nil {
				return err
			}
			if n > 0 {
				marked = append(marked, p.ID)
			}
		}
		return nil
	})
	if err != nil || s.logger == nil {
		return err
	}
	for _, id := range marked {
		c := byID[id]
		s.logger.LogAttrs(ctx, slog.LevelWarn, "interrupted compaction marked failed", slog.String("thread", c.ThreadID),
			slog.Int64("compaction_id", id), slog.String("outcome", string(StatusFailed)),
			slog.String("owner_host", c.OwnerHost), slog.Int64("owner_pid", c.OwnerPid))
	}
	return nil
}
