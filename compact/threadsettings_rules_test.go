package compact_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// Impossible settings are refused with the key at fault, and nothing is stored; a thread that
// does not exist is ErrThreadNotFound; what is stored reads back as it was set.
func TestThreadSettingsValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", corpus.Airline)
	bad := []struct {
		name string
		ts   compact.ThreadSettings
		key  string
	}{
		{"zero limit", compact.ThreadSettings{TokenLimit: ptr(0)}, "token_limit"},
		{"negative limit", compact.ThreadSettings{TokenLimit: ptr(-5)}, "token_limit"},
		{"negative reserve", compact.ThreadSettings{ReserveTokens: ptr(-1)}, "reserve_tokens"},
		{"limit not above reserve", compact.ThreadSettings{TokenLimit: ptr(1000), ReserveTokens: ptr(1000)}, "token_limit"},
		{"target zero", compact.ThreadSettings{TargetRatio: ptr(0.0)}, "target_ratio"},
		{"target NaN", compact.ThreadSettings{TargetRatio: ptr(math.NaN())}, "target_ratio"},
		{"trigger above 1", compact.ThreadSettings{TriggerRatio: ptr(1.5)}, "trigger_ratio"},
		{"target 1", compact.ThreadSettings{TargetRatio: ptr(1.0)}, "target_ratio"},
		{"target not below trigger", compact.ThreadSettings{TargetRatio: ptr(0.7), TriggerRatio: ptr(0.6)}, "target_ratio"},
		{"strategy not known", compact.ThreadSettings{Strategy: "shrink"}, "strategy"},
		{"model with a newline", compact.ThreadSettings{Model: "gpt\n4o"}, "model"},
	}
	for _, tc := range bad {
		err := compact.SaveThreadSettings(ctx, s, "t", tc.ts)
		var se *compact.SettingError
		if !errors.As(err, &se) || se.Key != tc.key {
			t.Errorf("%s: got %v; want a SettingError on %s", tc.name, err, tc.key)
		}
	}
	if got, err := compact.ThreadSettingsOf(ctx, s, "t"); err != nil || !got.IsZero() {
		t.Fatalf("after refused settings the thread has %+v, %v; want none", got, err)
	}
	// Valid alone, though not with every compactor: checked where it is combined.
	want := compact.ThreadSettings{TokenLimit: ptr(5000), TargetRatio: ptr(0.85), ReserveTokens: ptr(0), Strategy: "summarize", Model: "llama3.2:8b"}
	if err := compact.SaveThreadSettings(ctx, s, "t", want); err != nil {
		t.Fatal(err)
	}
	got, err := compact.ThreadSettingsOf(ctx, s, "t")
	if err != nil || *got.TokenLimit != 5000 || *got.TargetRatio != 0.85 || got.ReserveTokens == nil || *got.ReserveTokens != 0 ||
		got.TriggerRatio != nil || got.Strategy != "summarize" || got.Model != "llama3.2:8b" {
		t.Fatalf("read back %+v, %v; want what was set (reserve 0 set, trigger unset)", got, err)
	}
	ths, err := s.Threads(ctx)
	if err != nil || len(ths) != 1 {
		t.Fatalf("Threads: %+v, %v", ths, err)
	}
	if got, err := compact.SettingsOf(ths[0]); err != nil || got.TokenLimit == nil || *got.TokenLimit != 5000 {
		t.Fatalf("Threads does not carry the settings: %+v, %v", ths, err)
	}
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TriggerRatio: 0.8})
	_, err = c.Compact(ctx, "t", compact.Options{})
	if err == nil || !strings.Contains(err.Error(), "target_ratio 0.85 must be below trigger_ratio 0.8") {
		t.Fatalf("Compact with the thread's target over the compactor's trigger: %v; want the conflict named", err)
	}
	if _, err := c.ShouldCompact(ctx, "t"); err == nil || !strings.Contains(err.Error(), "target_ratio") {
		t.Fatalf("ShouldCompact with the same conflict: %v; want it named", err)
	}

	for _, op := range []func() error{
		func() error {
			return compact.SaveThreadSettings(ctx, s, "nope", compact.ThreadSettings{TokenLimit: ptr(5000)})
		},
		func() error { _, err := compact.ThreadSettingsOf(ctx, s, "nope"); return err },
	} {
		if err := op(); !errors.Is(err, memory.ErrThreadNotFound) {
			t.Errorf("unknown thread: got %v; want ErrThreadNotFound", err)
		}
	}
	var ts compact.ThreadSettings
	var se *compact.SettingError
	if err := ts.Unset("limit"); !errors.As(err, &se) {
		t.Errorf("Unset of an unknown key: %v; want a SettingError", err)
	}
}
