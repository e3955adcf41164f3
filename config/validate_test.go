package config_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/config"
)

// TestImpossibleNumbers: every numeric key refuses zero (where zero is not a valid value),
// negative numbers, NaN and both infinities, with an error naming the key and its line. None of
// them silently means the default.
func TestImpossibleNumbers(t *testing.T) {
	type key struct {
		section, name string
		zeroOK        bool
	}
	keys := []key{
		{"compaction", "token_limit", false},
		{"compaction", "reserve_tokens", true},
		{"compaction", "target_ratio", false},
		{"compaction", "trigger_ratio", false},
		{"compaction", "summary_max_tokens", false},
		{"compaction", "max_passes", false},
		{"compaction", "attempt_timeout", false},
		{"compaction", "total_timeout", false},
		{"cascade", "context_window", false},
		{"cascade", "max_output_tokens", false},
		{"cascade", "temperature", true},
		{"cascade", "timeout", false},
		{"cascade", "max_attempts", false},
		{"cascade", "cooldown", false},
		{"cascade", "max_cooldown", false},
	}
	for _, k := range keys {
		for _, v := range []string{"0", "-1", "-0.5", ".nan", ".NaN", ".inf", "-.inf", "+.inf", "1e400"} {
			if v == "0" && k.zeroOK {
				continue
			}
			var doc, want string
			if k.section == "compaction" {
				doc = fmt.Sprintf("model: gpt-4o\ncompaction:\n  %s: %s\n", k.name, v)
				want = "memctl.yaml:3: compaction." + k.name + ": "
			} else {
				doc = fmt.Sprintf("cascade:\n  - name: local\n    %s: %s\n", k.name, v)
				want = "memctl.yaml:3: cascade[0]." + k.name + ": "
			}
			_, err := config.Parse([]byte(doc), "memctl.yaml")
			var ce *config.Error
			if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %s: got %v, want an error starting %q", k.name, v, err, want)
			}
		}
	}
}
