package compact_test

import (
	"encoding/json"
	"testing"

	"github.com/memcascade/memcascade/compact"
)

// Every key of the compaction section a thread sets is applied over the compactor's settings,
// shown as set, survives the stored JSON, and is cleared by Unset; a bad total_timeout is
// refused naming the key.
func TestThreadSettingsEveryKey(t *testing.T) {
	t.Parallel()
	base := compact.Settings{}.WithDefaults()
	for key, ts := range map[string]compact.ThreadSettings{
		compact.KeySummaryMaxTokens: {SummaryMaxTokens: ptr(700)},
		compact.KeySummaryRole:      {SummaryRole: "user"},
		compact.KeyMaxPasses:        {MaxPasses: ptr(5)},
		compact.KeyTotalTimeout:     {TotalTimeout: "90s"},
		compact.KeyEmergencyRatio:   {EmergencyRatio: ptr(0.9)},
		compact.KeyOnFailure:        {OnFailure: "fit"},
		compact.KeyPromptFile:       {PromptFile: "p.md", Prompt: "Summarize the conversation.\n{{transcript}}\n"},
		compact.KeyMaxFailures:      {MaxFailures: ptr(7)},
		compact.KeyCascade:          {Cascade: "cheap"},
		compact.KeyPartCascade:      {PartCascade: "cheap"},
	} {
		if err := ts.Validate(); err != nil {
			t.Errorf("%s: Validate = %v", key, err)
			continue
		}
		if !ts.Has(key) {
			t.Errorf("%s: Has = false for a thread that sets it", key)
		}
		if got := ts.Apply(base).Value(key); got == base.Value(key) {
			t.Errorf("%s: applied value %s is the default's", key, got)
		}
		raw, _ := json.Marshal(ts)
		back, err := compact.ParseThreadSettings("t", raw)
		if err != nil || back.Apply(base).Value(key) != ts.Apply(base).Value(key) {
			t.Errorf("%s: stored as %s, read back %+v, %v", key, raw, back, err)
		}
		if over := (compact.ThreadSettings{}).Over(ts); !over.Has(key) {
			t.Errorf("%s: Over lost it", key)
		}
		if err := ts.Unset(key); err != nil || !ts.IsZero() {
			t.Errorf("%s: Unset = %v, left %+v", key, err, ts)
		}
	}
	var se *compact.SettingError
	for _, bad := range []string{"soon", "-1m", "0s"} {
		err := compact.ThreadSettings{TotalTimeout: bad}.Validate()
		if se, _ = err.(*compact.SettingError); se == nil || se.Key != compact.KeyTotalTimeout {
			t.Errorf("total_timeout %q: Validate = %v; want a setting error of total_timeout", bad, err)
		}
	}
	if err := (compact.ThreadSettings{MaxPasses: ptr(0)}).Validate(); err == nil {
		t.Error("max_passes 0 is valid; want it refused")
	}
}
