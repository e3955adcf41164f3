package config_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/config"
)

// problems returns the *Error values in err, in order.
func problems(t *testing.T, err error) []*config.Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []*config.Error
	for _, e := range errs {
		var ce *config.Error
		if !errors.As(e, &ce) {
			t.Fatalf("error %v (%T) is not a *config.Error", e, e)
		}
		out = append(out, ce)
	}
	return out
}

// badConfigs each hold one problem; they also seed FuzzParse.
var badConfigs = []struct {
	name string
	yaml string
	line int
	key  string
	msg  string // the exact message
}{
	// Syntax.
	{"tab indent", "model: x\ncompaction:\n\ttoken_limit: 1\n", 3, "", "invalid YAML: found character that cannot start any token"},
	{"bad indent in list", "model: x\ncascade:\n  - name: a\n    model: m\n   type: b\n", 5, "", "invalid YAML: did not find expected '-' indicator"},
	{"unclosed flow list", "model: x\nredact_patterns: [a\nmodel: y\n", 2, "", "invalid YAML: did not find expected ',' or ']'"},
	{"mapping on first line", "model: a: b\n", 1, "", "invalid YAML: mapping values are not allowed in this context"},
	{"unknown anchor", "model: x\n\ncascade: *nope\n", 3, "", "invalid YAML: unknown anchor 'nope' referenced"},
	{"two documents", "model: x\n---\nmodel: y\n", 3, "", "a config file holds one YAML document"},
	{"not a mapping", "- model\n", 1, "", `the config must be a mapping of settings, not a list`},
	{"scalar document", "\n\nhello\n", 3, "", `the config must be a mapping of settings, not "hello"`},

	// Unknown and duplicate keys.
	{"unknown top-level key", "model: x\nmodle: y\n", 2, "modle", "unknown key; did you mean model?"},
	{"unknown nested key", "model: x\n\n\n\n\ncompaction:\n  tokn_limit: 1\n", 7, "compaction.tokn_limit", "unknown key; did you mean token_limit?"},
	{"unknown provider key", "cascade:\n  - name: a\n    model: m\n    api_key: OPENAI\n", 4, "cascade[0].api_key", "unknown key; did you mean api_key_env?"},
	{"unrelated unknown key", "foo: 1\n", 1, "foo", "unknown key"},
	{"key at the wrong level", "model: x\ntoken_limit: 5\n", 2, "token_limit", "unknown key; token_limit belongs under compaction"},
	{"provider key at top", "timeout: 5s\n", 1, "timeout", "unknown key; timeout belongs to a cascade provider"},
	{"merge key", "compaction:\n  <<: {max_passes: 2}\n", 2, "compaction.<<", "merge keys (<<) are not supported"},

	// The turn and masking knobs.
	{"negative keep_turns", "compaction:\n  keep_turns: -1\n", 2, "compaction.keep_turns", "-1 must not be negative (0: off)"},
	{"negative compact_every_turns", "compaction:\n\n  compact_every_turns: -3\n", 3, "compaction.compact_every_turns", "-3 must not be negative (0: off)"},
	{"negative keep_tool_results", "compaction:\n  mask:\n    keep_tool_results: -2\n", 3, "compaction.mask.keep_tool_results", "-2 must not be negative (0: off)"},
	{"tool name not a string", "compaction:\n  mask:\n    exclude_tools:\n      - read_file\n      - {name: grep}\n", 5, "compaction.mask.exclude_tools[1]", "expected a tool's name (a string), found a mapping"},
	{"empty tool name", "compaction:\n  mask:\n    exclude_tools: [read_file, \"\"]\n", 3, "compaction.mask.exclude_tools[1]", `"" is empty: want a tool's name`},
	{"exclude_tools not a list", "compaction:\n  mask:\n    exclude_tools: read_file\n", 3, "compaction.mask.exclude_tools", `expected a list of tool names, found "read_file"`},
	{"mask not a mapping", "compaction:\n  mask: true\n", 2, "compaction.mask", `expected a mapping of mask settings (keep_tool_results, exclude_tools, clear_tool_inputs, clear_thinking), found "true"`},
	{"unknown mask key", "compaction:\n  mask:\n    keep_tool_result: 2\n", 3, "compaction.mask.keep_tool_result", "unknown key; did you mean keep_tool_results?"},
	{"duplicate key", "compaction:\n  max_passes: 2\n  token_limit: 9\n  max_passes: 3\n", 4, "compaction.max_passes", "duplicate key (first set at line 2)"},
	{"duplicate top key", "model: a\ncascade:\n  - name: x\n    model: m\nmodel: b\n", 5, "model", "duplicate key (first set at line 1)"},

	// Types.
	{"string for int", "model: x\ncompaction:\n  token_limit: abc\n", 3, "compaction.token_limit", `"abc" is not an integer (a number of tokens, or auto)`},
	{"float for int", "compaction:\n  max_passes: 2.5\n", 2, "compaction.max_passes", `"2.5" is not an integer`},
	{"int out of range", "compaction:\n  token_limit: 99999999999999999999\n", 2, "compaction.token_limit", `"99999999999999999999" is out of range (a number of tokens, or auto)`},
	{"list for int", "compaction:\n  max_passes: [1]\n", 2, "compaction.max_passes", "expected an integer, found a list"},
	{"string for ratio", "compaction:\n  target_ratio: half\n", 2, "compaction.target_ratio", `"half" is not a number`},
	{"bare number duration", "compaction:\n  attempt_timeout: 300\n", 2, "compaction.attempt_timeout", `300 is not a duration: write it with a unit, e.g. "60s", "5m", "1h"`},
	{"bad duration", "compaction:\n  total_timeout: 5 minutes\n", 2, "compaction.total_timeout", `"5 minutes" is not a duration (e.g. "60s", "5m", "1h")`},
	{"mapping for string", "model: {a: 1}\n", 1, "model", "expected a string, found a mapping"},
	{"compaction not a mapping", "compaction: 5\n", 1, "compaction", `expected a mapping of compaction settings, found "5"`},
	{"cascade not a list", "cascade:\n  name: x\n", 1, "cascade", "expected a list of providers, found a mapping"},
	{"provider not a mapping", "cascade:\n  - name: a\n    model: m\n  - offline\n", 4, "cascade[1]", `expected a provider (a mapping with at least a name), found "offline"`},
	{"patterns not a list", "redact_patterns: 'x+'\n", 1, "redact_patterns", `expected a list of regular expressions, found "x+"`},
	{"null pattern", "redact_patterns:\n  - a+\n  -\n", 3, "redact_patterns[1]", "expected a regular expression, found null"},
	{"binary string", "model: !!binary aGk=\n", 1, "model", "expected a string, found a value tagged !!binary"},

	// Top-level values.
	{"empty model", "model: ''\n", 1, "model", "must not be empty"},
	{"unknown encoding", "encoding: p60k_base\n", 1, "encoding", `"p60k_base" is not a known encoding: use o200k_base, cl100k_base, p50k_base, r50k_base, or "" to pick it from the model`},
	{"encoding and encoding_file", "encoding: o200k_base\nencoding_file: llama3.tiktoken\n", 2, "encoding_file", "set together with encoding: a thread is counted by one or the other, so set only one"},
	{"encoding_pattern alone", "encoding_pattern: '\\s+'\n", 1, "encoding_pattern", "set without encoding_file: it is the split pattern of that file's vocabulary"},
	{"bad encoding_pattern", "encoding_file: llama3.tiktoken\nencoding_pattern: '(?<'\n", 2, "encoding_pattern", "not a regular expression: error parsing regexp: unrecognized grouping construct: (?< in `(?<`"},
	{"bad pattern", "redact_patterns:\n  - 'ok'\n  - '(unclosed'\n", 3, "redact_patterns[1]", "invalid regular expression: error parsing regexp: missing closing ): `(unclosed`"},
	{"empty-matching pattern", "redact_patterns: ['a*']\n", 1, "redact_patterns[0]", `"a*" matches the empty string`},

	// Compaction values.
	{"ratio above 1", "model: x\n\n\n\n\n\n\n\n\n\ncompaction:\n  target_ratio: 1.5\n", 12, "compaction.target_ratio", "1.5 is outside (0, 1]"},
	{"ratio zero", "compaction:\n  trigger_ratio: 0\n", 2, "compaction.trigger_ratio", "0 is outside (0, 1]"},
	{"ratio nan", "compaction:\n  trigger_ratio: .nan\n", 2, "compaction.trigger_ratio", "NaN is outside (0, 1]"},
	{"target above default trigger", "compaction:\n  target_ratio: 0.9\n", 2, "compaction.target_ratio", "0.9 must be below trigger_ratio (0.8)"},
	{"target equal trigger", "compaction:\n  target_ratio: 0.7\n  trigger_ratio: 0.7\n", 2, "compaction.target_ratio", "0.7 must be below trigger_ratio (0.7, line 3)"},
	{"trigger below default target", "compaction:\n  trigger_ratio: 0.4\n", 2, "compaction.trigger_ratio", "0.4 must be above target_ratio (0.5)"},
	{"limit not above reserve", "compaction:\n  token_limit: 1000\n  reserve_tokens: 1000\n", 2, "compaction.token_limit", "1000 must be above reserve_tokens (1000, line 3)"},
	{"reserve above default limit", "compaction:\n  reserve_tokens: 200000\n", 2, "compaction.reserve_tokens", "200000 must be below token_limit (128000)"},
	{"negative reserve", "compaction:\n  reserve_tokens: -1\n", 2, "compaction.reserve_tokens", "-1 must not be negative"},
	{"zero limit", "compaction:\n  token_limit: 0\n", 2, "compaction.token_limit", "0 must be at least 1"},
	{"limit beyond the largest supported", "compaction:\n  token_limit: 9223372036854775807\n", 2, "compaction.token_limit", "9223372036854775807 is over the largest supported, 1073741824"},
	{"zero summary", "compaction:\n  summary_max_tokens: 0\n", 2, "compaction.summary_max_tokens", "0 must be at least 1"},
	{"bad role", "compaction:\n  summary_role: assistant\n", 2, "compaction.summary_role", `"assistant" must be system or user`},
	{"zero passes", "compaction:\n  max_passes: 0\n", 2, "compaction.max_passes", "0 must be at least 1"},
	{"zero attempt timeout", "compaction:\n  attempt_timeout: 0s\n", 2, "compaction.attempt_timeout", "0s must be positive"},
	{"negative total timeout", "compaction:\n  total_timeout: -1m\n", 2, "compaction.total_timeout", "-1m must be positive"},

	// Cascade.
	{"empty cascade", "model: x\ncascade: []\n", 2, "cascade", "at least one provider is required"},
	{"missing name", "cascade:\n  - name: a\n    model: m\n  - type: extractive\n    model: x\n", 4, "cascade[1].name", "is required: every provider needs a unique name"},
	{"blank name", "cascade:\n  - name: ' '\n    model: m\n", 2, "cascade[0].name", "must not be empty"},
	{"duplicate names", "cascade:\n  - name: a\n    model: m\n  - name: b\n    model: m\n  - name: a\n    type: extractive\n", 6, "cascade[2].name", `duplicate provider name "a" (also cascade[0] at line 2)`},
	{"bad type", "cascade:\n  - name: a\n    model: m\n    type: anthropic\n", 4, "cascade[0].type", `"anthropic" is not a provider type: use openai or extractive`},
	{"ftp url", "cascade:\n  - name: a\n    model: m\n    base_url: ftp://host/v1\n", 4, "cascade[0].base_url", `"ftp://host/v1" is not an http(s) URL`},
	{"url without scheme", "cascade:\n  - name: a\n    model: m\n    base_url: localhost:11434/v1\n", 4, "cascade[0].base_url", `"localhost:11434/v1" is not an http(s) URL`},
	{"empty model", "cascade:\n  - name: a\n    model: \"\"\n", 3, "cascade[0].model", "must not be empty"},
	{"zero context window", "cascade:\n  - name: a\n    model: m\n    context_window: 0\n", 4, "cascade[0].context_window", "0 must be at least 1"},
	{"zero max output", "cascade:\n  - name: a\n    model: m\n    max_output_tokens: 0\n", 4, "cascade[0].max_output_tokens", "0 must be at least 1"},
	{"temperature too high", "cascade:\n  - name: a\n    model: m\n    temperature: 2.5\n", 4, "cascade[0].temperature", "2.5 is outside [0, 2]"},
	{"temperature negative", "cascade:\n  - name: a\n    model: m\n    temperature: -0.1\n", 4, "cascade[0].temperature", "-0.1 is outside [0, 2]"},
	{"zero timeout", "cascade:\n  - name: a\n    model: m\n    timeout: 0s\n", 4, "cascade[0].timeout", "0s must be positive"},
	{"zero attempts", "cascade:\n  - name: a\n    model: m\n  - name: b\n    model: m\n    max_attempts: 0\n", 6, "cascade[1].max_attempts", "0 must be at least 1"},
	{"zero cooldown", "cascade:\n  - name: a\n    model: m\n    cooldown: 0s\n", 4, "cascade[0].cooldown", "0s must be positive"},
	{"zero max wait", "cascade:\n  - name: a\n    model: m\n    max_wait: 0s\n", 4, "cascade[0].max_wait", "0s must be positive"},
	{"max cooldown below default cooldown", "cascade:\n  - name: a\n    model: m\n    max_cooldown: 10s\n", 4, "cascade[0].max_cooldown", "10s must be at least cooldown (30s)"},
	{"cooldown above default max", "cascade:\n  - name: a\n    model: m\n    cooldown: 2h\n", 4, "cascade[0].cooldown", "2h must not exceed max_cooldown (1h)"},
	{"extractive base_url", "cascade:\n  - name: x\n    type: extractive\n    base_url: http://localhost/v1\n", 4, "cascade[0].base_url", "not used by type extractive"},
	{"extractive api_key_env", "cascade:\n  - name: x\n    type: extractive\n    api_key_env: KEY\n", 4, "cascade[0].api_key_env", "not used by type extractive"},
	{"extractive temperature", "cascade:\n  - name: x\n    type: extractive\n    temperature: 0.7\n", 4, "cascade[0].temperature", "not used by type extractive"},
	{"api key in api_key_env", "cascade:\n  - name: x\n    model: m\n    api_key_env: sk-proj-Abc123\n", 4, "cascade[0].api_key_env", "must name an environment variable, not hold a key"},
	{"variable starting with digit", "cascade:\n  - name: x\n    model: m\n    api_key_env: 1KEY\n", 4, "cascade[0].api_key_env", "must name an environment variable, not hold a key"},
}

func TestParseErrors(t *testing.T) {
	for _, tt := range badConfigs {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tt.yaml), "memctl.yaml")
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", cfg)
			}
			ps := problems(t, err)
			if len(ps) != 1 {
				t.Fatalf("got %d problems, want 1:\n%v", len(ps), err)
			}
			p := ps[0]
			if p.File != "memctl.yaml" || p.Line != tt.line || p.Key != tt.key || p.Msg != tt.msg {
				t.Fatalf("got  file=%q line=%d key=%q msg=%q\nwant file=%q line=%d key=%q msg=%q",
					p.File, p.Line, p.Key, p.Msg, "memctl.yaml", tt.line, tt.key, tt.msg)
			}
			want := "memctl.yaml:" + strconv.Itoa(tt.line) + ": "
			if tt.key != "" {
				want += tt.key + ": "
			}
			if want += tt.msg; err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
			if cfg.Source != "" || cfg.Cascade != nil {
				t.Errorf("Parse returned a config along with the error: %+v", cfg)
			}
		})
	}
}

func TestParseReportsEveryProblemInLineOrder(t *testing.T) {
	in := `cascade:
  - name: a
    max_attempts: 0
compaction:
  target_ratio: 2
  tokn_limit: 5
modle: x
`
	_, err := config.Parse([]byte(in), "m.yaml")
	ps := problems(t, err)
	want := []struct {
		line int
		key  string
	}{
		{2, "cascade[0].model"}, // no model: the line of the provider
		{3, "cascade[0].max_attempts"},
		{5, "compaction.target_ratio"},
		{6, "compaction.tokn_limit"},
		{7, "modle"},
	}
	if len(ps) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(ps), len(want), err)
	}
	for i, w := range want {
		if ps[i].Line != w.line || ps[i].Key != w.key {
			t.Errorf("problem %d = %d %s, want %d %s", i, ps[i].Line, ps[i].Key, w.line, w.key)
		}
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != 5 || !strings.HasPrefix(lines[0], "m.yaml:2: ") {
		t.Errorf("joined error text:\n%s", err)
	}
}

func TestBadValueIsNotCheckedTwice(t *testing.T) {
	// A token_limit that does not decode must not also be reported as not
	// above reserve_tokens.
	_, err := config.Parse([]byte("compaction:\n  token_limit: many\n  reserve_tokens: 5000\n"), "m.yaml")
	if ps := problems(t, err); len(ps) != 1 || ps[0].Key != "compaction.token_limit" {
		t.Fatalf("got %v", err)
	}
}

func TestDuplicateProviderNamesNameBothLines(t *testing.T) {
	in := "cascade:\n  - name: local\n    model: a\n  - name: cloud\n    model: b\n  - name: local\n    model: c\n"
	_, err := config.Parse([]byte(in), "memctl.yaml")
	ps := problems(t, err)
	if len(ps) != 1 {
		t.Fatalf("got %v", err)
	}
	if got := err.Error(); got != `memctl.yaml:6: cascade[2].name: duplicate provider name "local" (also cascade[0] at line 2)` {
		t.Fatalf("got %q", got)
	}
}

func TestUnknownKeySuggestions(t *testing.T) {
	for _, tt := range []struct {
		yaml, want string
	}{
		{"compaction:\n  tokn_limit: 1\n", "did you mean token_limit?"},
		{"compaction:\n  TargetRatio: 0.5\n", "did you mean target_ratio?"},
		{"compaction:\n  trigger-ratio: 0.9\n", "did you mean trigger_ratio?"},
		{"compaction:\n  Max_Passes: 2\n", "did you mean max_passes?"},
		{"cascade:\n  - name: a\n    modle: x\n", "did you mean model?"},
		{"cascade:\n  - name: a\n    typ: extractive\n", "did you mean type?"},
		{"cascade:\n  - name: a\n    max_cooldwon: 1h\n", "did you mean max_cooldown?"},
		{"redact_pattern: []\n", "did you mean redact_patterns?"},
		{"casacde: []\n", "did you mean cascade?"},
		{"compaction:\n  colour: red\n", ""},
	} {
		_, err := config.Parse([]byte(tt.yaml), "m.yaml")
		if err == nil {
			t.Fatalf("%q parsed", tt.yaml)
		}
		msg := problems(t, err)[0].Msg
		for _, p := range problems(t, err) { // a provider without a model is reported too
			if strings.HasPrefix(p.Msg, "unknown key") {
				msg = p.Msg
				break
			}
		}
		if !strings.HasPrefix(msg, "unknown key") {
			t.Errorf("%q: %q is not an unknown-key error", tt.yaml, msg)
		}
		if tt.want == "" && strings.Contains(msg, "did you mean") || !strings.Contains(msg, tt.want) {
			t.Errorf("%q: message %q, want %q", tt.yaml, msg, tt.want)
		}
	}
}

func TestAPIKeyEnvValueNotEchoed(t *testing.T) {
	secrets := []string{
		"sk-proj-AbCdEf0123456789",
		"sk_live_AbCdEf0123456789xyz",
		"AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQr",
		"gsk_AbCdEf0123456789GhIjKl",
		"Bearer abc.def",
	}
	for _, s := range secrets {
		for _, typ := range []string{"openai", "extractive"} {
			in := "cascade:\n  - name: x\n    type: " + typ + "\n    api_key_env: '" + s + "'\n    model: m\n"
			_, err := config.Parse([]byte(in), "m.yaml")
			if err == nil {
				t.Fatalf("api_key_env %q (type %s) accepted", s, typ)
			}
			if strings.Contains(err.Error(), s) || strings.Contains(err.Error(), s[:8]) {
				t.Errorf("error echoes the key: %v", err)
			}
			if p := problems(t, err)[0]; p.Line != 4 || p.Key != "cascade[0].api_key_env" {
				t.Errorf("error %v does not name line 4 and cascade[0].api_key_env", err)
			}
		}
		c := config.Config{Cascade: []config.Provider{{Name: "x", Model: "m", APIKeyEnv: s}}}.WithDefaults()
		if err := c.Validate(); err == nil || strings.Contains(err.Error(), s[:8]) {
			t.Errorf("Validate with api_key_env %q: %v", s, err)
		}
	}
	// Variable names pass.
	for _, v := range []string{"OPENAI_API_KEY", "openrouter_key", "_K", "GROQ_API_KEY_2"} {
		in := "cascade:\n  - name: x\n    model: m\n    api_key_env: " + v + "\n"
		if _, err := config.Parse([]byte(in), "m.yaml"); err != nil {
			t.Errorf("api_key_env %q rejected: %v", v, err)
		}
	}
	// A value in a structure is not echoed either.
	_, err := config.Parse([]byte("cascade:\n  - name: x\n    api_key_env: [sk-proj-AbCdEf0123456789]\n"), "m.yaml")
	if err == nil || strings.Contains(err.Error(), "sk-proj") {
		t.Errorf("list api_key_env: %v", err)
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tt := range []struct {
		e    config.Error
		want string
	}{
		{config.Error{File: "memctl.yaml", Line: 12, Key: "compaction.target_ratio", Msg: "1.5 is outside (0, 1]"}, "memctl.yaml:12: compaction.target_ratio: 1.5 is outside (0, 1]"},
		{config.Error{File: "memctl.yaml", Key: "cascade", Msg: "m"}, "memctl.yaml: cascade: m"},
		{config.Error{Key: "cascade[1].max_attempts", Msg: "0 must be at least 1"}, "cascade[1].max_attempts: 0 must be at least 1"},
		{config.Error{File: "f", Line: 3, Msg: "invalid YAML: x"}, "f:3: invalid YAML: x"},
		{config.Error{Line: 3, Key: "k", Msg: "m"}, "line 3: k: m"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestSyntaxErrorLineAfterMultiLineValue(t *testing.T) {
	// The first line alone fails the same way as the whole file; the error
	// is on line 5.
	in := "redact_patterns: [a\n  , b]\ncompaction:\n  max_passes: 2\nmodel: [x\n"
	_, err := config.Parse([]byte(in), "m.yaml")
	ps := problems(t, err)
	if len(ps) != 1 || ps[0].Line != 5 || !strings.Contains(ps[0].Msg, "invalid YAML") {
		t.Fatalf("got %v", err)
	}
}
