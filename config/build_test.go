package config_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestNewCompactorOnTheStoreClock: the cascade NewCompactor builds stamps its attempts and
// cooldowns with the store's clock, so that a test (or a host) sets one clock: the store's.
func TestNewCompactorOnTheStoreClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	s, _ := storetest.OpenWith(t, memory.Options{Now: func() time.Time { return t0 }})
	storetest.Import(t, s, "t", corpus.Airline)
	before, _ := s.Active(ctx, "t")
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
	}))
	defer down.Close()
	provider := "  - {name: %s, base_url: %s/v1, model: m, max_attempts: 1, cooldown: 1s, max_cooldown: 1m}\n"
	cfg, err := config.Parse([]byte(fmt.Sprintf("offline: false\ncompaction: {token_limit: %d}\ncascade:\n"+provider+provider,
		before.Tokens/2, "a", down.URL, "b", down.URL)), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, casc, err := cfg.NewCompactor(s.DB(), s, cascade.Options{}, compact.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(ctx, "t", compact.Options{Force: true}); !errors.Is(err, compact.ErrSummarize) {
		t.Fatalf("got %v, want ErrSummarize", err)
	}
	attempts, err := s.Attempts(ctx, "", 0)
	if err != nil || len(attempts) != 2 {
		t.Fatalf("attempts %v (%v), want two", attempts, err)
	}
	for _, a := range attempts {
		if !a.StartedAt.Equal(t0) {
			t.Errorf("attempt of %s started at %v, want the store's clock %v", a.Provider, a.StartedAt, t0)
		}
	}
	st, err := casc.Status(ctx)
	if err != nil || len(st) != 2 {
		t.Fatalf("status %+v (%v), want two providers", st, err)
	}
	for _, p := range st {
		if p.CoolingUntil == nil || !p.CoolingUntil.Equal(t0.Add(time.Second)) {
			t.Errorf("%s cooling until %v, want the store's clock + 1s", p.Name, p.CoolingUntil)
		}
	}
}

// TestNamesCascade: a config names a cascade of its own unless it has none, or the built-in one
// written out; NewCompactorWith puts its first rungs before the config's cascade.
func TestNamesCascade(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		yaml string
		want bool
	}{
		{"", false},
		{"model: gpt-4o\n", false},
		{"cascade:\n  - name: offline\n    type: extractive\n", false},
		{"cascade:\n  - name: mine\n    type: extractive\n", true},
		{"cascade:\n  - name: local\n    model: llama3.2\n", true},
		{"cascade:\n  - name: offline\n    type: extractive\n    max_attempts: 3\n", true},
	} {
		cfg, err := config.Parse([]byte(c.yaml), "c.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.NamesCascade(); got != c.want {
			t.Errorf("%q: NamesCascade() = %v, want %v", c.yaml, got, c.want)
		}
	}
	s, _ := storetest.OpenWith(t, memory.Options{})
	first := cascade.Entry{Name: "upstream", Provider: &cascade.Fake{}}
	_, casc, err := config.Default().NewCompactorWith(s.DB(), s, cascade.Options{}, compact.Config{}, []cascade.Entry{first})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(casc.Entries); n != 2 || casc.Entries[0].Name != "upstream" || casc.Entries[1].Name != config.OfflineName {
		t.Fatalf("entries %+v, want upstream then offline", casc.Entries)
	}
}
