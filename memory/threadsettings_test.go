package memory_test

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

func ptr[T any](v T) *T { return &v }

// Impossible settings are refused with the key at fault, and nothing is stored; a thread that
// does not exist is ErrThreadNotFound; what is stored reads back as it was set.
func TestThreadSettingsValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", corpus.Airline)
	bad := []struct {
		name string
		ts   memory.ThreadSettings
		key  string
	}{
		{"zero limit", memory.ThreadSettings{TokenLimit: ptr(0)}, "token_limit"},
		{"negative limit", memory.ThreadSettings{TokenLimit: ptr(-5)}, "token_limit"},
		{"negative reserve", memory.ThreadSettings{ReserveTokens: ptr(-1)}, "reserve_tokens"},
		{"limit not above reserve", memory.ThreadSettings{TokenLimit: ptr(1000), ReserveTokens: ptr(1000)}, "token_limit"},
		{"target zero", memory.ThreadSettings{TargetRatio: ptr(0.0)}, "target_ratio"},
		{"target NaN", memory.ThreadSettings{TargetRatio: ptr(math.NaN())}, "target_ratio"},
		{"trigger above 1", memory.ThreadSettings{TriggerRatio: ptr(1.5)}, "trigger_ratio"},
		{"target 1", memory.ThreadSettings{TargetRatio: ptr(1.0)}, "target_ratio"},
		{"target not below trigger", memory.ThreadSettings{TargetRatio: ptr(0.7), TriggerRatio: ptr(0.6)}, "target_ratio"},
		{"strategy not known", memory.ThreadSettings{Strategy: "shrink"}, "strategy"},
		{"model with a newline", memory.ThreadSettings{Model: "gpt\n4o"}, "model"},
	}
	for _, tc := range bad {
		err := s.SetThreadSettings(ctx, "t", tc.ts)
		var se *memory.SettingError
		if !errors.As(err, &se) || se.Key != tc.key {
			t.Errorf("%s: got %v; want a SettingError on %s", tc.name, err, tc.key)
		}
	}
	if got, err := s.ThreadSettings(ctx, "t"); err != nil || !got.IsZero() {
		t.Fatalf("after refused settings the thread has %+v, %v; want none", got, err)
	}
	// Valid alone, though not with every compactor: checked where it is combined.
	want := memory.ThreadSettings{TokenLimit: ptr(5000), TargetRatio: ptr(0.85), ReserveTokens: ptr(0), Strategy: "summarize", Model: "llama3.2:8b"}
	if err := s.SetThreadSettings(ctx, "t", want); err != nil {
		t.Fatal(err)
	}
	got, err := s.ThreadSettings(ctx, "t")
	if err != nil || *got.TokenLimit != 5000 || *got.TargetRatio != 0.85 || got.ReserveTokens == nil || *got.ReserveTokens != 0 ||
		got.TriggerRatio != nil || got.Strategy != "summarize" || got.Model != "llama3.2:8b" {
		t.Fatalf("read back %+v, %v; want what was set (reserve 0 set, trigger unset)", got, err)
	}
	ths, err := s.Threads(ctx)
	if err != nil || len(ths) != 1 || ths[0].Settings.TokenLimit == nil || *ths[0].Settings.TokenLimit != 5000 {
		t.Fatalf("Threads does not carry the settings: %+v, %v", ths, err)
	}
	c := compact.New(s, storetest.ExtractiveCascade(t, s), memory.Settings{TriggerRatio: 0.8})
	_, err = c.Compact(ctx, "t", compact.Options{})
	if err == nil || !strings.Contains(err.Error(), "target_ratio 0.85 must be below trigger_ratio 0.8") {
		t.Fatalf("Compact with the thread's target over the compactor's trigger: %v; want the conflict named", err)
	}
	if _, err := c.ShouldCompact(ctx, "t"); err == nil || !strings.Contains(err.Error(), "target_ratio") {
		t.Fatalf("ShouldCompact with the same conflict: %v; want it named", err)
	}

	for _, op := range []func() error{
		func() error { return s.SetThreadSettings(ctx, "nope", memory.ThreadSettings{TokenLimit: ptr(5000)}) },
		func() error { _, err := s.ThreadSettings(ctx, "nope"); return err },
	} {
		if err := op(); !errors.Is(err, memory.ErrThreadNotFound) {
			t.Errorf("unknown thread: got %v; want ErrThreadNotFound", err)
		}
	}
	var ts memory.ThreadSettings
	var se *memory.SettingError
	if err := ts.Unset("limit"); !errors.As(err, &se) {
		t.Errorf("Unset of an unknown key: %v; want a SettingError", err)
	}
}
