package compact_test

import (
	"strings"
	"testing"

	"github.com/memcascade/memcascade/compact"
)

// Problems lists every broken rule, with the parts the config file words them with; Validate
// reports the first of them.
func TestSettingsProblemsListsEveryRule(t *testing.T) {
	t.Parallel()
	s := compact.Settings{TokenLimit: 1000, ReserveTokens: 1000, TargetRatio: 0.9, TriggerRatio: 0.8,
		SummaryMaxTokens: 1, SummaryRole: "assistant", MaxPasses: 1, Strategy: "shrink", EmergencyRatio: 2, OnFailure: "keep", MaxFailures: 1, QueueSize: 1}
	ps := s.Problems()
	// The registered strategies: the built-in ones and this binary's own (TestOwnStrategy's).
	names := compact.Strategies()
	known := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	want := []compact.SettingError{
		{Key: "token_limit", Value: "1000", Rule: "must be above", Other: "reserve_tokens", OtherValue: "1000", OtherRule: "must be below",
			Msg: "token_limit 1000 must be above reserve_tokens 1000"},
		{Key: "target_ratio", Value: "0.9", Rule: "must be below", Other: "trigger_ratio", OtherValue: "0.8", OtherRule: "must be above",
			Msg: "target_ratio 0.9 must be below trigger_ratio 0.8"},
		{Key: "summary_role", Value: `"assistant"`, Rule: "must be system or user", Msg: `summary_role "assistant" must be system or user`},
		{Key: "strategy", Value: `"shrink"`, Rule: "is not known (want " + known + ")",
			Msg: `strategy "shrink" is not known (want ` + known + ")"},
		{Key: "emergency_ratio", Value: "2", Rule: "is outside (0, 1]", Msg: "emergency_ratio 2 is outside (0, 1]"},
	}
	if len(ps) != len(want) {
		t.Fatalf("Problems() = %v, want %d problems", ps, len(want))
	}
	for i, w := range want {
		if *ps[i] != w {
			t.Errorf("problem %d = %+v, want %+v", i, *ps[i], w)
		}
	}
	if err := s.Validate(); err == nil || err.Error() != want[0].Msg {
		t.Errorf("Validate() = %v, want the first problem", err)
	}
	// A rule between two settings waits for each to be valid alone.
	if ps := (compact.Settings{TokenLimit: 0, ReserveTokens: 5, TargetRatio: 0.5, TriggerRatio: 0.8, SummaryMaxTokens: 1,
		SummaryRole: "system", MaxPasses: 1, Strategy: "mask", EmergencyRatio: 1, OnFailure: "fit", MaxFailures: 1, QueueSize: 1}).Problems(); len(ps) != 1 || ps[0].Key != "token_limit" || ps[0].Other != "" {
		t.Errorf("limit 0 with reserve 5: %v, want only token_limit at least 1", ps)
	}
}

// The fit rule of memctl serve: the messages within L, the messages and the tools within
// the limit; a limit the reserve leaves no room in gets a quarter of it as the reserve.
func TestFitRule(t *testing.T) {
	t.Parallel()
	s := compact.Settings{TokenLimit: 1000, ReserveTokens: 200}.WithDefaults()
	for _, c := range []struct {
		tokens, tools int
		want          bool
	}{{800, 200, true}, {801, 0, false}, {700, 301, false}, {700, 300, true}} {
		if got := s.Fits(c.tokens, c.tools); got != c.want {
			t.Errorf("Fits(%d, %d) = %v, want %v", c.tokens, c.tools, got, c.want)
		}
	}
	base := compact.Settings{ReserveTokens: 4000}
	over := compact.LimitOverride(base, compact.ThreadSettings{}, 3000)
	if *over.TokenLimit != 3000 || over.ReserveTokens == nil || *over.ReserveTokens != 750 {
		t.Fatalf("limit 3000 under the reserve 4000: %+v", over)
	}
	over = compact.LimitOverride(base, compact.ThreadSettings{}, 10000)
	if *over.TokenLimit != 10000 || over.ReserveTokens != nil {
		t.Fatalf("limit 10000 over the reserve 4000: %+v", over)
	}
	over = compact.LimitOverride(base, compact.ThreadSettings{ReserveTokens: ptr(10)}, 0)
	if *over.TokenLimit != 1 || *over.ReserveTokens != 0 {
		t.Fatalf("limit 0 with the thread's reserve 10: %+v", over)
	}
}
