package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/cputime"
	"github.com/memcascade/memcascade/memory"
)

// searchQuery is the search of the search step: two words of the airline conversations, found
// in many messages of every thread.
const searchQuery = "flight reservation"

// searchThread: `memctl search --thread` on a database of 1,000 threads of 1,000 messages each
// (-quick: 50 of 200) whose appends interleave, as those of agents writing at once (each
// thread appends 50 messages in its turn), beside the same search on a database of that
// thread alone (the same messages, appended the same way), on each backend. The messages are
// the corpus's text, each marked with its thread and place. The two databases are searched in
// turns, so that a change of the machine's load weighs on both alike: the whole process (the
// issue's measure, within 2 x the thread alone), then Store.Search in this process; each with
// its CPU time (the process's; this process's, which runs nothing else meanwhile), the measure
// to compare on a loaded machine.
func (b *bench) searchThread(corpus []conversation) error {
	threads, per := 1000, 1000
	if b.quick {
		threads, per = 50, 200
	}
	var pool []chat.Message
	for _, c := range corpus[:min(len(corpus), 3)] { // one copy of each conversation
		for _, m := range c.msgs {
			if t := m.Text(); t != "" {
				role := chat.RoleUser
				if m.Role == chat.RoleAssistant {
					role = chat.RoleAssistant
				}
				pool = append(pool, chat.TextMessage(role, t))
			}
		}
	}
	messages := func(k int) []chat.Message {
		out := make([]chat.Message, per)
		for i := range out {
			m := pool[(k*131+i)%len(pool)]
			out[i] = chat.TextMessage(m.Role, fmt.Sprintf("[thread %d message %d] %s", k, i+1, m.Text()))
		}
		return out
	}
	fill := func(s *memory.Store, n int) error {
		const turn = 50
		msgs := make([][]chat.Message, n)
		for k := range msgs {
			msgs[k] = messages(k)
		}
		for at := 0; at < per; at += turn {
			for k := range n {
				if _, err := s.Append(context.Background(), fmt.Sprintf("thread-%04d", k), msgs[k][at:min(at+turn, per)], memory.AppendOptions{}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, backend := range b.backends() {
		err := b.onBackend(backend, "alone.db", func(alone string) error {
			return b.onBackend(backend, "many.db", func(many string) error {
				start := time.Now()
				for _, db := range []struct {
					name string
					n    int
				}{{alone, 1}, {many, threads}} {
					s, err := openStore(db.name)
					if err != nil {
						return err
					}
					err = fill(s, db.n)
					if cerr := s.Close(); err == nil {
						err = cerr
					}
					if err != nil {
						return err
					}
				}
				what := fmt.Sprintf("of one thread, %q, among %d threads x %d messages interleaved vs the thread alone, %s", searchQuery, threads, per, backend)
				fmt.Fprintf(os.Stderr, "  (%s: written in %s)\n", what, time.Since(start).Round(time.Second))
				if b.memctl == "" {
					b.add("memctl search --thread, search "+what, "not run (needs -memctl)", "<= 2 x alone", nil)
				} else {
					var da, dm, ca, cm []time.Duration
					for range 7 {
						for _, c := range []struct {
							name   string
							ds, cs *[]time.Duration
						}{{alone, &da, &ca}, {many, &dm, &cm}} {
							cmd := exec.Command(b.memctl, "--db", c.name, "search", "--thread", "thread-0000", "--json", searchQuery)
							cmd.Dir = b.dir
							d, out, err := timeProcess(cmd)
							if err != nil {
								return err
							}
							var hits []json.RawMessage
							if json.Unmarshal([]byte(out), &hits) != nil || len(hits) != memory.DefaultSearchLimit {
								return fmt.Errorf("memctl search found %d hits, want %d: %.300s", len(hits), memory.DefaultSearchLimit, out)
							}
							*c.ds = append(*c.ds, d)
							*c.cs = append(*c.cs, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
						}
					}
					a, m := median(da), median(dm)
					b.add("memctl search --thread, search "+what+" (whole process, median of 7)",
						ratioText(m, a)+"; CPU "+ratioText(median(cm), median(ca)), "<= 2 x alone", ptr(m <= 2*a))
				}
				sa, err := openStore(alone)
				if err != nil {
					return err
				}
				defer sa.Close()
				sm, err := openStore(many)
				if err != nil {
					return err
				}
				defer sm.Close()
				var da, dm, ca, cm []time.Duration
				var first []memory.SearchHit
				for range 7 {
					for _, c := range []struct {
						s      *memory.Store
						ds, cs *[]time.Duration
					}{{sa, &da, &ca}, {sm, &dm, &cm}} {
						start, cpu := time.Now(), cputime.Self()
						hits, err := c.s.Search(context.Background(), searchQuery, memory.SearchOptions{Thread: "thread-0000"})
						*c.ds, *c.cs = append(*c.ds, time.Since(start)), append(*c.cs, cputime.Self()-cpu)
						if err != nil {
							return err
						}
						if first == nil {
							first = hits
						}
						if len(hits) != memory.DefaultSearchLimit || fmt.Sprint(hits) != fmt.Sprint(first) {
							return fmt.Errorf("Store.Search found other hits among the threads than alone:\n%v\n%v", hits, first)
						}
					}
				}
				a, m := median(da), median(dm)
				b.add("Store.Search, search "+what+" (median of 7)", ratioText(m, a)+"; CPU "+ratioText(median(cm), median(ca)), "", nil)
				return nil
			})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ratioText writes a measure beside its floor: "m vs a (r x)".
func ratioText(m, a time.Duration) string {
	return fmt.Sprintf("%s vs %s (%.2f x)", m.Round(100*time.Microsecond), a.Round(100*time.Microsecond), float64(m)/float64(a))
}
