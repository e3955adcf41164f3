package config_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/config"
)

const testdata = "../testdata/config"

func dur(s string) config.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return config.Duration(d)
}

func TestDefault(t *testing.T) {
	want := config.Config{
		Model:    "gpt-4o",
		Encoding: "",
		Compaction: config.Compaction{
			TokenLimit:       config.WindowAuto, // memctl serve reads the window; compact.DefaultTokenLimit elsewhere
			ReserveTokens:    0,
			TargetRatio:      0.5,
			TriggerRatio:     0.8,
			SummaryMaxTokens: 2048,
			SummaryRole:      "system",
			MaxPasses:        3,
			AttemptTimeout:   dur("5m"),
			TotalTimeout:     dur("15m"),
			Strategy:         "summarize",
			EmergencyRatio:   0.95,
			OnFailure:        "keep",
			MaxFailures:      3,
			Cascade:          "default",
			PartCascade:      "none",
			QueueSize:        3,
		},
		RedactPatterns: []string{},
		Cascade: []config.Provider{{
			Name:            "offline",
			Type:            "extractive",
			BaseURL:         "",
			Model:           "extractive",
			APIKeyEnv:       "",
			ContextWindow:   8192,
			MaxOutputTokens: 1024,
			Temperature:     0,
			Timeout:         dur("60s"),
			MaxAttempts:     2,
			MaxWait:         dur("10s"),
			Concurrency:     1,
			Cooldown:        dur("30s"),
			MaxCooldown:     dur("1h"),
		}},
		Cascades: map[string][]config.Provider{},
		Serve:    config.Serve{Listen: config.DefaultListen, Notice: config.Notice{AtRatio: config.DefaultNoticeRatio}},
		Source:   "built-in default",
	}
	got := config.Default()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Default() =\n%#v\nwant\n%#v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	// Each call returns fresh slices.
	got.Cascade[0].Name = "changed"
	got.RedactPatterns = append(got.RedactPatterns, "x")
	if again := config.Default(); again.Cascade[0].Name != "offline" || len(again.RedactPatterns) != 0 {
		t.Fatalf("Default() shares state between calls: %+v", again)
	}
}

func TestParseEmptyIsDefault(t *testing.T) {
	for _, in := range []string{"", "\n", "# only a comment\n", "---\n", "~\n", "compaction:\ncascade:\n"} {
		got, err := config.Parse([]byte(in), "memctl.yaml")
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		want := config.Default()
		want.Source = "memctl.yaml"
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q) =\n%#v\nwant the defaults", in, got)
		}
	}
}

// promptFile is the prompt file full.yaml names (the built-in prompt, as shipped), by its
// absolute path: a config built in Go has no file for a relative path to start from.
func promptFile() string {
	p, err := filepath.Abs(filepath.Join(testdata, "../prompts/default.txt"))
	if err != nil {
		panic(err)
	}
	return p
}

func fullConfig(source string) config.Config {
	return config.Config{
		Model:    "gpt-4.1-mini",
		Encoding: "o200k_base",
		Compaction: config.Compaction{
			TokenLimit:        200000,
			ReserveTokens:     16000,
			TargetRatio:       0.4,
			TriggerRatio:      0.9,
			SummaryMaxTokens:  4096,
			SummaryRole:       "user",
			MaxPasses:         5,
			AttemptTimeout:    dur("2m"),
			TotalTimeout:      dur("90m"),
			Strategy:          "hybrid",
			EmergencyRatio:    0.97,
			OnFailure:         "fit",
			PromptFile:        promptFile(),
			KeepTurns:         3,
			CompactEveryTurns: 10,
			Mask:              config.Mask{KeepToolResults: 4, ExcludeTools: []string{"read_file", "grep"}, ClearToolInputs: true, ClearThinking: true},
			MaxFailures:       5,
			Cascade:           "main",
			PartCascade:       "cheap",
			MaxCost:           0.25,
			QueueSize:         4,
		},
		RedactPatterns: []string{`ACME-[0-9]{6}`, `(?i)internal\.example\.com`},
		Cascade: []config.Provider{
			{
				Name: "cloud", Type: "openai", BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-mini",
				APIKeyEnv: "OPENAI_API_KEY", ContextWindow: 128000, MaxOutputTokens: 4096, Temperature: 0.2,
				Timeout: dur("90s"), MaxAttempts: 3, MaxWait: dur("30s"), Concurrency: 4, Cooldown: dur("1m"), MaxCooldown: dur("2h"),
				PricePerMTok: &config.Price{Input: 0.15, Output: 0.6},
			},
			{
				Name: "local", Type: "openai", BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen2.5:7b",
				APIKeyEnv: "", ContextWindow: 32768, MaxOutputTokens: 2048, Temperature: 1.5,
				Timeout: dur("150s"), MaxAttempts: 1, MaxWait: dur("5s"), Concurrency: 2, Cooldown: dur("10s"), MaxCooldown: dur("10m"),
			},
			{
				Name: "offline", Type: "extractive", Model: "extractive",
				ContextWindow: 16384, MaxOutputTokens: 512,
				Timeout: dur("5s"), MaxAttempts: 1, MaxWait: dur("1s"), Concurrency: 1, Cooldown: dur("1s"), MaxCooldown: dur("1s"),
			},
		},
		Cascades: map[string][]config.Provider{
			"main":  {config.Provider{Name: "cloud-large", Model: "gpt-4.1", BaseURL: "https://api.openai.com/v1", APIKeyEnv: "OPENAI_API_KEY"}.WithDefaults()},
			"cheap": {config.Provider{Name: "local", Model: "qwen2.5:7b", ContextWindow: 32768}.WithDefaults()},
		},
		Serve: config.Serve{Listen: config.DefaultListen, Notice: config.Notice{Enabled: true, AtRatio: 0.7}},
		Hooks: config.Hooks{
			BeforeCompaction: &config.Hook{Command: []string{"/usr/local/bin/before-hook", "--json"}, Timeout: dur("3s")},
			AfterCompaction:  &config.Hook{Command: []string{"./notify.sh"}, Timeout: dur("1s")},
		},
		Source: source,
	}
}

func TestParseFull(t *testing.T) {
	path := filepath.Join(testdata, "full.yaml")
	got, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := fullConfig(path)
	want.Compaction.PromptFile = "../prompts/default.txt" // as written, relative to full.yaml
	b, err := os.ReadFile(promptFile())
	if err != nil {
		t.Fatal(err)
	}
	want.Compaction.Prompt = string(b)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Load(full.yaml) =\n%#v\nwant\n%#v", got, want)
	}
	// full.yaml really sets every key to a non-default value, so the test
	// above would catch a key that is ignored.
	def := config.Default()
	if got.Model == def.Model || got.Encoding == def.Encoding {
		t.Error("full.yaml leaves a top-level key at its default")
	}
	gv, dv := reflect.ValueOf(got.Compaction), reflect.ValueOf(def.Compaction)
	for i := range gv.NumField() {
		if reflect.DeepEqual(gv.Field(i).Interface(), dv.Field(i).Interface()) {
			t.Errorf("full.yaml leaves compaction.%s at its default", gv.Type().Field(i).Tag.Get("yaml"))
		}
	}
	pd := config.Provider{Name: "x"}.WithDefaults()
	pv, dpv := reflect.ValueOf(got.Cascade[0]), reflect.ValueOf(pd)
	for i := range pv.NumField() {
		// type openai is the only type with every key meaningful.
		if pv.Type().Field(i).Name != "Type" && pv.Field(i).Interface() == dpv.Field(i).Interface() {
			t.Errorf("full.yaml leaves cascade[0].%s at its default", pv.Type().Field(i).Tag.Get("yaml"))
		}
	}
}

func TestParseMinimal(t *testing.T) {
	path := filepath.Join(testdata, "minimal.yaml")
	got, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Default()
	want.Source = path
	want.Cascade = []config.Provider{
		{
			Name: "local", Type: "openai", BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.2",
			ContextWindow: 8192, MaxOutputTokens: 1024, Temperature: 0,
			Timeout: dur("60s"), MaxAttempts: 2, MaxWait: dur("10s"), Concurrency: 1, Cooldown: dur("30s"), MaxCooldown: dur("1h"),
		},
		config.Default().Cascade[0],
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Load(minimal.yaml) =\n%#v\nwant\n%#v", got, want)
	}
}

func TestParseNullMeansDefault(t *testing.T) {
	got, err := config.Parse([]byte("model: ~\ncompaction:\n  token_limit:\ncascade:\n  - name: a\n    model: m\n    max_wait: null\n"), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "gpt-4o" || got.Compaction.TokenLimit != config.WindowAuto || got.Cascade[0].MaxWait != dur("10s") {
		t.Fatalf("null values did not take defaults: %+v", got)
	}
	// A provider's model has no default: null is absent, and absent is an error naming the line.
	_, err = config.Parse([]byte("cascade:\n  - name: a\n    model: null\n"), "m.yaml")
	if err == nil || err.Error() != "m.yaml:2: cascade[0].model: is required: name the model the server serves (e.g. model: llama3.2)" {
		t.Fatalf("a provider without a model: %v", err)
	}
}

func TestParseScalarsAndAliases(t *testing.T) {
	in := `
model: 4
compaction:
  token_limit: 0x10000
  reserve_tokens: 1_000
  target_ratio: &r 0.25
  trigger_ratio: 1
cascade:
  - &base
    name: 1
    context_window: 4096
    model: m
  - name: two
    model: 2024-01-01
    timeout: 1.5s
`
	got, err := config.Parse([]byte(in), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "4" || got.Compaction.TokenLimit != 65536 || got.Compaction.ReserveTokens != 1000 ||
		got.Compaction.TargetRatio != 0.25 || got.Compaction.TriggerRatio != 1 {
		t.Errorf("scalars decoded as %+v", got)
	}
	if got.Cascade[0].Name != "1" || got.Cascade[1].Model != "2024-01-01" || got.Cascade[1].Timeout != dur("1500ms") {
		t.Errorf("providers decoded as %+v", got.Cascade)
	}
	withAlias, err := config.Parse([]byte("redact_patterns: [&p 'x+', *p]\ncascade:\n  - &a {name: a, model: m}\n"), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(withAlias.RedactPatterns, []string{"x+", "x+"}) {
		t.Errorf("aliases: %q", withAlias.RedactPatterns)
	}
}

func TestExtractiveDefaults(t *testing.T) {
	got, err := config.Parse([]byte("cascade:\n  - name: x\n    type: extractive\n    model: textrank\n"), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := got.Cascade[0]
	if p.Model != "textrank" || p.BaseURL != "" || p.APIKeyEnv != "" || p.ContextWindow != 8192 || p.MaxAttempts != 2 {
		t.Fatalf("extractive provider = %+v", p)
	}
	// An extractive provider may have max_output_tokens >= context_window:
	// it never sends a request.
	if _, err := config.Parse([]byte("cascade:\n  - name: x\n    type: extractive\n    context_window: 100\n"), "m.yaml"); err != nil {
		t.Fatalf("extractive with small context_window: %v", err)
	}
}

func TestLoad(t *testing.T) {
	got, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, config.Default()) || got.Source != "built-in default" {
		t.Fatalf("Load(\"\") = %+v, want Default()", got)
	}

	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, err = config.Load(missing)
	var ce *config.Error
	if !errors.As(err, &ce) || ce.File != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load(missing) = %v, want an *Error for the file wrapping fs.ErrNotExist", err)
	}
	if !strings.HasPrefix(err.Error(), missing+": cannot read config file: ") {
		t.Errorf("Load(missing) error reads %q", err)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("model: x\ncompaction:\n  max_passes: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = config.Load(bad)
	if err == nil || err.Error() != bad+":3: compaction.max_passes: 0 must be at least 1" {
		t.Fatalf("Load(bad) = %v", err)
	}
}

// TestLocate: flag, then $MEMCTL_CONFIG, then the per-user file if it exists; a memctl.yaml in
// the working directory is never used.
func TestLocate(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	xdg := filepath.Join(dir, "xdg")
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("MEMCTL_CONFIG", "")
	if err := os.WriteFile("memctl.yaml", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("config.yaml", nil, 0o600); err != nil {
		t.Fatal(err)
	}

	if got := config.Locate(""); got != "" {
		t.Errorf("nothing set, no user file, files in the working directory: Locate = %q, want \"\"", got)
	}
	user := filepath.Join(xdg, "memctl", "config.yaml")
	if got, err := config.UserPath(); err != nil || got != user {
		t.Errorf("UserPath = %q, %v; want %q", got, err, user)
	}
	if err := os.MkdirAll(filepath.Dir(user), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := config.Locate(""); got != user {
		t.Errorf("user file exists: Locate = %q, want %q", got, user)
	}
	t.Setenv("MEMCTL_CONFIG", "/etc/memctl/env.yaml")
	if got := config.Locate(""); got != "/etc/memctl/env.yaml" {
		t.Errorf("env set: Locate = %q, want the env value", got)
	}
	if got := config.Locate("flag.yaml"); got != "flag.yaml" {
		t.Errorf("flag set: Locate = %q, want the flag", got)
	}
	t.Setenv("MEMCTL_CONFIG", "")
	if got := config.Locate("flag.yaml"); got != "flag.yaml" {
		t.Errorf("flag set, user file exists: Locate = %q, want the flag", got)
	}
	if err := os.Remove(user); err != nil {
		t.Fatal(err)
	}
	if got := config.Locate(""); got != "" {
		t.Errorf("user file removed, empty env: Locate = %q, want \"\"", got)
	}
	// A relative XDG_CONFIG_HOME is ignored, as the base directory specification says.
	t.Setenv("XDG_CONFIG_HOME", "rel")
	t.Setenv("HOME", dir)
	if got, _ := config.UserPath(); runtime.GOOS == "linux" && got != filepath.Join(dir, ".config", "memctl", "config.yaml") {
		t.Errorf("relative XDG_CONFIG_HOME: UserPath = %q", got)
	}
}

func TestValidate(t *testing.T) {
	good := config.Config{Cascade: []config.Provider{{Name: "a", Model: "m"}, {Name: "b", Type: "extractive"}}}.WithDefaults()
	if err := good.Validate(); err != nil {
		t.Fatalf("WithDefaults config: %v", err)
	}
	if good.Cascade[0].BaseURL != "http://127.0.0.1:11434/v1" || good.Cascade[1].Model != "extractive" ||
		good.Compaction.TokenLimit != config.WindowAuto || good.Settings().TokenLimit != 128000 || good.Model != "gpt-4o" || good.RedactPatterns == nil {
		t.Fatalf("WithDefaults did not fill defaults: %+v", good)
	}
	if got := (config.Config{}).WithDefaults(); !reflect.DeepEqual(got.Cascade, config.Default().Cascade) {
		t.Errorf("WithDefaults with nil cascade = %+v, want the default cascade", got.Cascade)
	}

	tests := []struct {
		name   string
		modify func(*config.Config)
		want   string // the whole error text
	}{
		{"zero config", func(c *config.Config) { *c = config.Config{Cascade: []config.Provider{}} }, ""},
		{"target above trigger", func(c *config.Config) { c.Compaction.TargetRatio = 0.9 },
			"compaction.target_ratio: 0.9 must be below trigger_ratio (0.8)"},
		{"reserve too big", func(c *config.Config) { c.Compaction.ReserveTokens = 128000 },
			"compaction.token_limit: 128000 must be above reserve_tokens (128000)"},
		{"empty cascade", func(c *config.Config) { c.Cascade = nil },
			"cascade: at least one provider is required"},
		{"duplicate names", func(c *config.Config) { c.Cascade[1].Name = "a" },
			`cascade[1].name: duplicate provider name "a" (also cascade[0])`},
		{"zero type", func(c *config.Config) { c.Cascade[0].Type = "" },
			`cascade[0].type: "" is not a provider type: use openai or extractive`},
		{"key in api_key_env", func(c *config.Config) { c.Cascade[0].APIKeyEnv = "sk-live-0123456789" },
			"cascade[0].api_key_env: must name an environment variable, not hold a key"},
		{"extractive base_url", func(c *config.Config) { c.Cascade[1].BaseURL = "http://x" },
			"cascade[1].base_url: not used by type extractive"},
		{"max_attempts", func(c *config.Config) { c.Cascade[1].MaxAttempts = 0 },
			"cascade[1].max_attempts: 0 must be at least 1"},
		{"bad pattern", func(c *config.Config) { c.RedactPatterns = []string{"ok", "(x"} },
			"redact_patterns[1]: invalid regular expression: error parsing regexp: missing closing ): `(x`"},
		{"invalid utf-8", func(c *config.Config) { c.Model = "gpt\xff" },
			"model: is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			c.Cascade = append([]config.Provider(nil), good.Cascade...)
			tt.modify(&c)
			err := c.Validate()
			if tt.want == "" {
				if err == nil {
					t.Fatal("Validate() = nil, want errors")
				}
				var ce *config.Error
				if !errors.As(err, &ce) || ce.Line != 0 || ce.File != "" {
					t.Fatalf("Validate() = %v, want *Error without file or line", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Validate() = %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	full := fullConfig("x")
	odd := config.Default()
	odd.Model = "yes"
	odd.RedactPatterns = []string{`"quoted"`, "#hash", "- dash", "null", "a: b", "\ttab"}
	odd.Cascade = []config.Provider{
		config.Provider{Name: "123", Model: "~", Temperature: 0.1 + 0.2, Timeout: config.Duration(1500 * time.Microsecond)}.WithDefaults(),
		config.Provider{Name: " spaced ", Type: "extractive", Model: "true"}.WithDefaults(),
	}
	for name, c := range map[string]config.Config{"default": config.Default(), "full": full, "odd": odd} {
		t.Run(name, func(t *testing.T) {
			if err := c.Validate(); err != nil {
				t.Fatalf("input does not validate: %v", err)
			}
			out := c.YAML()
			got, err := config.Parse(out, "rendered.yaml")
			if err != nil {
				t.Fatalf("YAML() output does not parse: %v\n%s", err, out)
			}
			got.Source = c.Source
			got.Compaction.Prompt = "" // read from prompt_file; a config built in Go has none
			if !reflect.DeepEqual(got, c) {
				t.Fatalf("round trip changed the config:\n%s\ngot  %#v\nwant %#v", out, got, c)
			}
		})
	}
}

func TestYAMLShowsEveryKey(t *testing.T) {
	c := config.Default()
	c.Cascade = append(c.Cascade, config.Provider{Name: "o", APIKeyEnv: "OPENAI_API_KEY"}.WithDefaults())
	out := string(c.YAML())
	for _, k := range []string{
		"model:", "encoding:", "compaction:", "token_limit:", "reserve_tokens:", "target_ratio:", "trigger_ratio:",
		"summary_max_tokens:", "summary_role:", "max_passes:", "attempt_timeout: 5m", "total_timeout: 15m",
		"redact_patterns: []", "cascade:", "name: o", "type: openai", "base_url:", "api_key_env: OPENAI_API_KEY",
		"context_window:", "max_output_tokens:", "temperature:", "timeout: 1m", "max_attempts:", "max_wait: 10s", "cooldown: 30s", "max_cooldown: 1h",
	} {
		if !strings.Contains(out, k) {
			t.Errorf("YAML() lacks %q:\n%s", k, out)
		}
	}
	// The extractive provider omits the keys that mean nothing to it.
	first := out[strings.Index(out, "name: offline"):strings.Index(out, "name: o\n")]
	for _, k := range []string{"base_url", "api_key_env", "temperature"} {
		if strings.Contains(first, k) {
			t.Errorf("extractive provider renders %s:\n%s", k, first)
		}
	}
}

func TestJSON(t *testing.T) {
	c := fullConfig("full.yaml")
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		`"source":"full.yaml"`, `"attempt_timeout":"2m"`, `"total_timeout":"90m"`, `"api_key_env":"OPENAI_API_KEY"`,
		`"timeout":"2m30s"`, `"redact_patterns":["ACME-[0-9]{6}"`, `"target_ratio":0.4`, `"summary_role":"user"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("JSON lacks %s:\n%s", want, s)
		}
	}
	var back config.Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("JSON round trip:\n%#v\nwant\n%#v", back, c)
	}
	if b, _ := json.Marshal(config.Default()); !strings.Contains(string(b), `"redact_patterns":[]`) {
		t.Errorf("default redact_patterns marshals as %s, want []", b)
	}
}

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{time.Hour, "1h"},
		{48 * time.Hour, "48h"},
		{5 * time.Minute, "5m"},
		{60 * time.Second, "1m"},
		{90 * time.Minute, "90m"},
		{90 * time.Second, "1m30s"},
		{30 * time.Second, "30s"},
		{1500 * time.Millisecond, "1.5s"},
		{-5 * time.Minute, "-5m"},
		{time.Hour + time.Second, "1h0m1s"},
	} {
		d := config.Duration(tt.d)
		if got := d.String(); got != tt.want {
			t.Errorf("Duration(%v).String() = %q, want %q", tt.d, got, tt.want)
		}
		j, err := json.Marshal(d)
		if err != nil || string(j) != `"`+tt.want+`"` {
			t.Errorf("json.Marshal(%v) = %s, %v", tt.d, j, err)
		}
		var back config.Duration
		if err := json.Unmarshal(j, &back); err != nil || back != d {
			t.Errorf("json round trip of %v = %v, %v", tt.d, back, err)
		}
		y, err := d.MarshalYAML()
		if err != nil || y != tt.want {
			t.Errorf("MarshalYAML(%v) = %v, %v", tt.d, y, err)
		}
	}
	for _, in := range []string{`60`, `"60"`, `"soon"`, `""`, `{}`} {
		var d config.Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("json.Unmarshal(%s) into Duration succeeded: %v", in, d)
		}
	}
	d := config.Duration(time.Second)
	if err := json.Unmarshal([]byte(`null`), &d); err != nil || d != config.Duration(time.Second) {
		t.Errorf("json.Unmarshal(null) = %v, %v; want no change", d, err)
	}
	if err := json.Unmarshal([]byte(`"1h30m"`), &d); err != nil || time.Duration(d) != 90*time.Minute {
		t.Errorf("json.Unmarshal(\"1h30m\") = %v, %v", d, err)
	}
}

// awkwardStrings are values that YAML would read as something else, or
// mangle, if they were written out unquoted.
var awkwardStrings = []string{
	"", " lead", "trail ", "\u2028", "a\u2029b", "\ufeffx", "a\u00a0", "#", "a #b", ": ", "a: b", "- ", "-",
	"'", `"`, "@", "`", "%", "!", "&", "*", "? ", "|", ">", "{", "[", "---", "...", "0o17", "0x1F", "1_000",
	".inf", ".NaN", "~", "null", "NULL", "y", "on", "off", "yes", "no", "True", "<<", "=", "1e3", "1:20",
	"2001-12-14t21:59:43.10-05:00", `\`, `a\nb`, "日本", "😀", "\u200b", "\ufffe",
}

func TestYAMLRoundTripAwkwardValues(t *testing.T) {
	for _, s := range awkwardStrings {
		c := config.Default()
		c.Model = s + "m"
		c.RedactPatterns = []string{regexp.QuoteMeta(s) + "x"}
		c.Cascade = []config.Provider{
			config.Provider{Name: "n" + s, Model: s + "z", APIKeyEnv: "K"}.WithDefaults(),
			config.Provider{Name: s + "e", Type: "extractive", Model: s + "x"}.WithDefaults(),
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		out := c.YAML()
		back, err := config.Parse(out, "r.yaml")
		if err != nil {
			t.Errorf("%q: YAML() output does not parse: %v\n%s", s, err, out)
			continue
		}
		back.Source = c.Source
		if !reflect.DeepEqual(back, c) {
			t.Errorf("%q: round trip changed the config:\n%s", s, out)
		}
	}
	c := config.Default()
	c.RedactPatterns = []string{"\tx", "a\nb", "\x01x", "\u0085x", "x\r\n", "\x7fx", " x ", "x\u2028"}
	c.Cascade[0].Model = "m\u2028\u2029"
	c.Cascade = append(c.Cascade, config.Provider{Name: "u", Model: "m", BaseURL: "http://h/\u2028 x?q=#"}.WithDefaults())
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if back, err := config.Parse(c.YAML(), c.Source); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("control characters: %v\n%s", err, c.YAML())
	}
	for _, f := range []float64{0, 1e-7, 0.1 + 0.2, 1.9999999999999998, 5e-324, 2} {
		c := config.Default()
		c.Cascade = []config.Provider{config.Provider{Name: "n", Model: "m", Temperature: f}.WithDefaults()}
		back, err := config.Parse(c.YAML(), "r.yaml")
		if err != nil || back.Cascade[0].Temperature != f {
			t.Errorf("temperature %v: got %v, %v\n%s", f, back.Cascade, err, c.YAML())
		}
	}
}

// TestPromptFileErrors: a prompt_file that is missing or does not say where the transcript
// goes is refused at load, the error naming the key, its line and the file.
func TestPromptFileErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "memctl.yaml")
	if err := os.WriteFile(filepath.Join(dir, "bad.txt"), []byte("Summarize the conversation."), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"bad.txt": "no line {{transcript}}", "missing.txt": "no such file"} {
		os.WriteFile(cfg, []byte("compaction:\n  prompt_file: "+file+"\n"), 0o600)
		_, err := config.Load(cfg)
		if err == nil || !strings.Contains(err.Error(), "compaction.prompt_file") || !strings.Contains(err.Error(), filepath.Join(dir, file)) ||
			!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ":2:") {
			t.Errorf("prompt_file %s: %v; want an error at line 2 naming the file and saying %q", file, err, want)
		}
	}
	os.WriteFile(filepath.Join(dir, "good.txt"), []byte("Summarize.\n{{transcript}}\n"), 0o600)
	os.WriteFile(cfg, []byte("compaction:\n  prompt_file: good.txt\n"), 0o600)
	c, err := config.Load(cfg)
	if err != nil || c.Settings().Prompt != "Summarize.\n{{transcript}}\n" {
		t.Fatalf("good prompt: %v, prompt %q", err, c.Settings().Prompt)
	}
}
