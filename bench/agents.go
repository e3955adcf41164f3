package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// agentRows: the agents row of serve (50 agents at once, each on its own thread, 20 turns each
// resending their whole history: see runAgents) on each backend, memctl serve in a child
// process on a fresh database; on PostgreSQL beside its floor in the same run: pgbench on the
// same server, 50 clients each running pairs of single-row INSERT transactions (a turn writes
// the request's new message and the reply), in a scratch table of the same fresh schema.
func (b *bench) agentRows([]conversation) error {
	if b.memctl == "" {
		b.add("serve: agents at once on each backend", "not run (needs -memctl)", "", nil)
		return nil
	}
	agents, turns, floorTime := 50, 20, 10*time.Second
	if b.quick {
		agents, turns, floorTime = 10, 5, 2*time.Second
	}
	up, err := startUpstream()
	if err != nil {
		return err
	}
	defer up.close()
	for _, backend := range b.backends() {
		err := b.onBackend(backend, "agents.db", func(name string) error {
			served := name
			if backend == postgresBackend {
				// Its connections named, for pg_stat_activity.
				u, err := url.Parse(name)
				if err != nil {
					return err
				}
				q := u.Query()
				q.Set("application_name", "memcascade-bench-agents")
				u.RawQuery = q.Encode()
				served = u.String()
			}
			p, err := b.startServe(served, up.url)
			if err != nil {
				return err
			}
			r, err := runAgents(p, up, "agent", agents, turns, 0)
			p.stop()
			if err != nil {
				return err
			}
			rate, p50, p99 := r.served(), pct(r.lat, 50), pct(r.lat, 99)
			b.add(fmt.Sprintf("serve, %s: %d agents at once, %d turns each, straight to the upstream", backend, agents, turns), fmt.Sprintf("%.0f turns/s", r.direct()), "", nil)
			value := fmt.Sprintf("%.0f turns/s, p50 %s, p99 %s (server CPU %s a turn)", rate, ms2(p50), ms2(p99), ms2(r.cpu))
			row := fmt.Sprintf("serve, %s: the same %d agents through the proxy (every turn stored once)", backend, agents)
			if backend == sqliteBackend {
				b.add(row, value, ">= 1000 turns/s, p99 < 50 ms", ptr(rate >= 1000 && p99 < 50*time.Millisecond))
			} else {
				floor, err := b.pgbenchPairs(name, agents, floorTime)
				if err != nil {
					return err
				}
				if floor == 0 {
					b.add(row, value, "", nil)
				} else {
					b.add(row, value, fmt.Sprintf(">= half the floor (%.0f turns/s)", floor/2), ptr(rate >= floor/2))
				}
			}
			// The agents' first turns are sent at the same instant, each creating its thread:
			// one in 20 of the turns, so they alone can make the p99 (the 10th slowest of 1,000).
			b.add(fmt.Sprintf("serve, %s: of those, the %d first turns (sent at once, each creating its thread); the other turns", backend, agents),
				fmt.Sprintf("first p50 %s, max %s; the others p50 %s, p99 %s", ms2(pct(r.first, 50)), ms2(pct(r.first, 100)), ms2(pct(r.later, 50)), ms2(pct(r.later, 99))), "", nil)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// pgbenchPairs runs pgbench against the PostgreSQL database name (a URL with its search_path
// set to a fresh schema, see freshDB): clients clients for d, each running a script of two
// single-row INSERT transactions into a scratch table it creates in that schema, and adds the
// floor row. It returns the pairs per second (0 when pgbench is not installed: the row says so).
func (b *bench) pgbenchPairs(name string, clients int, d time.Duration) (float64, error) {
	row := fmt.Sprintf("floor, PostgreSQL: pgbench, %d clients, pairs of single-row INSERT transactions (a turn's two writes), %s", clients, d)
	bin := pgbenchPath()
	if bin == "" {
		b.add(row, "not run (pgbench not found in PATH or /usr/lib/postgresql/*/bin)", "", nil)
		return 0, nil
	}
	u, err := url.Parse(name)
	if err != nil {
		return 0, err
	}
	q := u.Query()
	schema := q.Get("search_path")
	if schema == "" {
		return 0, errors.New("pgbench: the database URL names no schema")
	}
	// libpq refuses parameters it does not know, search_path among them: the table is named
	// with its schema instead. schema is freshDB's prefix and hex digits, never outside text.
	q.Del("search_path")
	u.RawQuery = q.Encode()
	table := schema + ".pgbench_turns"
	if _, err := b.pgAdmin.ExecContext(context.Background(), "CREATE TABLE "+table+` (id bigserial PRIMARY KEY, thread text NOT NULL, seq bigint NOT NULL, body text NOT NULL, created_at bigint NOT NULL)`); err != nil {
		return 0, fmt.Errorf("pgbench: create its table: %w", err)
	}
	script := filepath.Join(b.dir, "pgbench-turn.sql")
	body := fmt.Sprintf(`\set t random(1, %d)
INSERT INTO %s (thread, seq, body, created_at) VALUES ('agent-' || :t, 1, repeat('context ', 20), 1700000000000);
INSERT INTO %s (thread, seq, body, created_at) VALUES ('agent-' || :t, 2, 'reply: the tests pass now.', 1700000000000);
`, clients, table, table)
	if err := os.WriteFile(script, []byte(body), 0o600); err != nil {
		return 0, err
	}
	cmd := exec.Command(bin, "-n", "-c", strconv.Itoa(clients), "-j", "2", "-T", strconv.Itoa(int(d.Seconds())), "-f", script, u.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	m := regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`).FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench: no tps in its output: %s", out)
	}
	tps, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return 0, err
	}
	lat := ""
	if m := regexp.MustCompile(`latency average = ([0-9.]+) ms`).FindSubmatch(out); m != nil {
		lat = fmt.Sprintf(", latency average %s ms a pair", m[1])
	}
	b.add(row, fmt.Sprintf("%.0f pairs/s%s", tps, lat), "", nil)
	return tps, nil
}

// pgbenchPath finds pgbench: in PATH, else in a PostgreSQL installation's bin directory.
func pgbenchPath() string {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p
	}
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(ms) > 0 {
		return ms[len(ms)-1]
	}
	return ""
}
