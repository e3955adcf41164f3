package compact_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

func ptr[T any](v T) *T { return &v }

var longConversation = corpus.Airline

// A thread set to a limit under its size is due at its next check and is compacted at that
// limit, although the compactor's own limit is far above it; unset, the compactor's applies
// again.
func TestThreadLimitCompactsAtNextCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", longConversation)
	th, err := s.Thread(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if th.ActiveTokens <= 5000 {
		t.Fatalf("the conversation has %d tokens: the test needs more than 5000", th.ActiveTokens)
	}
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 128000})
	if due, err := c.ShouldCompact(ctx, "t"); err != nil || due {
		t.Fatalf("ShouldCompact = %v, %v before the thread has settings; want false", due, err)
	}
	if err := compact.SaveThreadSettings(ctx, s, "t", compact.ThreadSettings{TokenLimit: ptr(5000)}); err != nil {
		t.Fatal(err)
	}
	if due, err := c.ShouldCompact(ctx, "t"); err != nil || !due {
		t.Fatalf("ShouldCompact = %v, %v with the thread's limit 5000 under %d tokens; want true", due, err, th.ActiveTokens)
	}
	if err := compact.SaveThreadSettings(ctx, s, "t", compact.ThreadSettings{}); err != nil {
		t.Fatal(err)
	}
	if due, err := c.ShouldCompact(ctx, "t"); err != nil || due {
		t.Fatalf("ShouldCompact = %v, %v after the thread's settings were cleared; want false", due, err)
	}
	if err := compact.SaveThreadSettings(ctx, s, "t", compact.ThreadSettings{TokenLimit: ptr(5000)}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Compact(ctx, "t", compact.Options{})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("Compact: %+v, %v; want applied", rep, err)
	}
	// At or above 95% of the thread's limit the reason is emergency (emergency_ratio).
	reason := compact.ReasonThreshold
	if rep.TokensBefore >= 4750 {
		reason = compact.ReasonEmergency
	}
	if rep.TokenLimit != 5000 || rep.Reason != reason || rep.TokensAfter > 5000 {
		t.Fatalf("report: limit %d, reason %s, tokens after %d; want the thread's limit 5000, %s, at most 5000",
			rep.TokenLimit, rep.Reason, rep.TokensAfter, reason)
	}
	a, err := s.Active(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	checkActive(t, a, chat.RoleSystem, 5000)
	// The call's override wins over the thread: at 20000 the compacted thread is not due.
	rep, err = c.Compact(ctx, "t", compact.Options{Override: compact.ThreadSettings{TokenLimit: ptr(20000)}})
	if err != nil || rep.Status != compact.StatusNotNeeded || rep.TokenLimit != 20000 {
		t.Fatalf("Compact with an override of 20000: %+v, %v; want not_needed at 20000", rep, err)
	}
}

// The precedence of every setting: the call's, then the thread's, then the compactor's, then
// the built-in default.
func TestThreadSettingsPrecedence(t *testing.T) {
	t.Parallel()
	cfg := compact.Settings{TokenLimit: 8000, TargetRatio: 0.4, ReserveTokens: 500}
	thread := compact.ThreadSettings{TokenLimit: ptr(6000), TriggerRatio: ptr(0.9), ReserveTokens: ptr(0)}
	call := compact.ThreadSettings{TokenLimit: ptr(4000), TargetRatio: ptr(0.3)}
	cases := []struct {
		name         string
		cfg          compact.Settings
		thread, call compact.ThreadSettings
		limit        int
		target       float64
		trigger      float64
		reserve      int
		strategy     string
	}{
		{"defaults", compact.Settings{}, compact.ThreadSettings{}, compact.ThreadSettings{}, compact.DefaultTokenLimit, compact.DefaultTargetRatio, compact.DefaultTriggerRatio, 0, "summarize"},
		{"config over defaults", cfg, compact.ThreadSettings{}, compact.ThreadSettings{}, 8000, 0.4, compact.DefaultTriggerRatio, 500, "summarize"},
		{"thread over config", cfg, thread, compact.ThreadSettings{}, 6000, 0.4, 0.9, 0, "summarize"},
		{"thread over defaults", compact.Settings{}, thread, compact.ThreadSettings{}, 6000, compact.DefaultTargetRatio, 0.9, 0, "summarize"},
		{"call over thread", cfg, thread, call, 4000, 0.3, 0.9, 0, "summarize"},
		{"call over config", cfg, compact.ThreadSettings{}, call, 4000, 0.3, compact.DefaultTriggerRatio, 500, "summarize"},
		{"thread strategy", compact.Settings{}, compact.ThreadSettings{Strategy: "summarize"}, compact.ThreadSettings{}, compact.DefaultTokenLimit, compact.DefaultTargetRatio, compact.DefaultTriggerRatio, 0, "summarize"},
	}
	for _, tc := range cases {
		got := compact.Effective(tc.cfg, tc.thread, tc.call)
		if got.TokenLimit != tc.limit || got.TargetRatio != tc.target || got.TriggerRatio != tc.trigger ||
			got.ReserveTokens != tc.reserve || got.Strategy != tc.strategy {
			t.Errorf("%s: got limit %d, target %g, trigger %g, reserve %d, strategy %q; want %d, %g, %g, %d, %q", tc.name,
				got.TokenLimit, got.TargetRatio, got.TriggerRatio, got.ReserveTokens, got.Strategy,
				tc.limit, tc.target, tc.trigger, tc.reserve, tc.strategy)
		}
	}
}

// A call's override is held to the same rules: its 0 is a value, refused, not the default.
func TestCompactOverrideValidated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", longConversation)
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{})
	_, err := c.Compact(ctx, "t", compact.Options{Override: compact.ThreadSettings{TokenLimit: ptr(0)}})
	var se *compact.SettingError
	if !errors.As(err, &se) || se.Key != "token_limit" {
		t.Fatalf("Compact with an override limit of 0: %v; want a SettingError on token_limit", err)
	}
}

// SettingsFor merges the call's override over the thread's settings over the compactor's
// over the defaults, fills every default once, and refuses what is impossible merged (a
// thread's limit under the config's reserve) or given (a NaN ratio in the override).
func TestSettingsForMergesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", longConversation)
	if err := compact.SaveThreadSettings(ctx, s, "t", compact.ThreadSettings{TokenLimit: ptr(9000), TriggerRatio: ptr(0.7)}); err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 128000, ReserveTokens: 1000, TriggerRatio: 0.9})
	got, err := c.SettingsFor(ctx, "t", compact.ThreadSettings{TriggerRatio: ptr(0.6)})
	if err != nil {
		t.Fatal(err)
	}
	want := compact.Settings{TokenLimit: 9000, ReserveTokens: 1000, TriggerRatio: 0.6}.WithDefaults()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SettingsFor = %+v\nwant %+v", got, want)
	}
	if got.Budget() != 8000 {
		t.Fatalf("Budget = %d, want 8000", got.Budget())
	}
	if _, err := c.SettingsFor(ctx, "t", compact.ThreadSettings{TargetRatio: ptr(math.NaN())}); !strings.HasPrefix(fmt.Sprint(err), "override: target_ratio NaN") {
		t.Fatalf("a NaN override: %v", err)
	}
	c.Settings.ReserveTokens = 9000
	var se *compact.SettingError
	if _, err := c.SettingsFor(ctx, "t", compact.ThreadSettings{}); !errors.As(err, &se) || se.Key != compact.KeyTokenLimit ||
		err.Error() != "settings: token_limit 9000 must be above reserve_tokens 9000" {
		t.Fatalf("a limit at the config's reserve: %v", err)
	}
	if _, err := c.SettingsFor(ctx, "nope", compact.ThreadSettings{}); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Fatalf("an unknown thread: %v", err)
	}
}
