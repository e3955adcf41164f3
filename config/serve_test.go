package config_test

import (
	"strings"
	"testing"

	"github.com/memcascade/memcascade/config"
)

func TestServeSection(t *testing.T) {
	cfg, err := config.Parse([]byte("serve:\n  listen: 0.0.0.0:9000\n  upstream: http://127.0.0.1:11434/v1\n  upstream_key_env: OPENAI_API_KEY\n  token_env: MEMCTL_TOKEN\n  recall: true\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := config.Serve{Listen: "0.0.0.0:9000", Upstream: "http://127.0.0.1:11434/v1", UpstreamKeyEnv: "OPENAI_API_KEY", TokenEnv: "MEMCTL_TOKEN", Recall: true,
		Notice: config.Notice{AtRatio: config.DefaultNoticeRatio}}
	if cfg.Serve != want {
		t.Fatalf("serve = %+v, want %+v", cfg.Serve, want)
	}
	// memctl config renders it, and the rendering parses back.
	back, err := config.Parse(cfg.YAML(), "rendered")
	if err != nil || back.Serve != want {
		t.Fatalf("rendered and parsed back: %+v, %v\n%s", back.Serve, err, cfg.YAML())
	}
	if d := config.Default().Serve; d.Listen != "127.0.0.1:8787" || d.Upstream != "" || d.Recall || d.Notice != (config.Notice{AtRatio: 0.8}) {
		t.Fatalf("default serve = %+v", d)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"serve:\n  listen: 8787\n", "c.yaml:2: serve.listen: \"8787\" is not an address"},
		{"serve:\n  upstream: localhost:11434\n", "c.yaml:2: serve.upstream: \"localhost:11434\" is not an http(s) URL"},
		{"serve:\n  token_env: sk-abc123\n", "c.yaml:2: serve.token_env: must name an environment variable"},
		{"serve:\n  upstream_key_env: \"sk proj\"\n", "c.yaml:2: serve.upstream_key_env: must name an environment variable"},
		{"serve:\n  listne: x:1\n", "c.yaml:2: serve.listne: unknown key; did you mean listen?"},
		{"serve: 8787\n", "c.yaml:1: serve: expected a mapping of serve settings"},
		{"serve:\n  recall: sometimes\n", "c.yaml:2: serve.recall:"},
		{"listen: 127.0.0.1:1\n", "listen: unknown key; listen belongs under serve"},
		{"serve:\n  notice:\n    enabled: true\n    at_ratio: 0\n", "c.yaml:4: serve.notice.at_ratio: 0 is outside (0, 1]"},
		{"serve:\n  notice:\n    at_ratio: 1.5\n", "c.yaml:3: serve.notice.at_ratio: 1.5 is outside (0, 1]"},
		{"serve:\n  notice:\n    at_ratio: high\n", "c.yaml:3: serve.notice.at_ratio:"},
		{"serve:\n  notice: yes\n", "c.yaml:2: serve.notice: expected a mapping of notice settings (enabled, at_ratio)"},
		{"serve:\n  notice:\n    enabeld: true\n", "c.yaml:3: serve.notice.enabeld: unknown key; did you mean enabled?"},
		{"notice:\n  enabled: true\n", "notice: unknown key; notice belongs under serve"},
	} {
		_, err := config.Parse([]byte(tc.yaml), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestServeNotice: serve.notice is read, rendered by memctl config and read back; off by
// default, at_ratio 0.8 unless set, and 0.8 for a Config built in Go that leaves it 0.
func TestServeNotice(t *testing.T) {
	cfg, err := config.Parse([]byte("serve:\n  notice:\n    enabled: true\n    at_ratio: 0.6\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := config.Notice{Enabled: true, AtRatio: 0.6}
	if cfg.Serve.Notice != want {
		t.Fatalf("notice = %+v, want %+v", cfg.Serve.Notice, want)
	}
	if !strings.Contains(string(cfg.YAML()), "  notice:\n    enabled: true\n    at_ratio: 0.6\n") {
		t.Errorf("memctl config renders:\n%s", cfg.YAML())
	}
	back, err := config.Parse(cfg.YAML(), "rendered")
	if err != nil || back.Serve.Notice != want {
		t.Fatalf("rendered and parsed back: %+v, %v", back.Serve.Notice, err)
	}
	on, err := config.Parse([]byte("serve:\n  notice:\n    enabled: true\n"), "c.yaml")
	if err != nil || on.Serve.Notice != (config.Notice{Enabled: true, AtRatio: 0.8}) {
		t.Fatalf("enabled alone: %+v, %v", on.Serve.Notice, err)
	}
	if n := (config.Config{}).WithDefaults().Serve.Notice; n != (config.Notice{AtRatio: 0.8}) {
		t.Errorf("WithDefaults: %+v", n)
	}
}
