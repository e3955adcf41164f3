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
	want := config.Serve{Listen: "0.0.0.0:9000", Upstream: "http://127.0.0.1:11434/v1", UpstreamKeyEnv: "OPENAI_API_KEY", TokenEnv: "MEMCTL_TOKEN", Recall: true}
	if cfg.Serve != want {
		t.Fatalf("serve = %+v, want %+v", cfg.Serve, want)
	}
	// memctl config renders it, and the rendering parses back.
	back, err := config.Parse(cfg.YAML(), "rendered")
	if err != nil || back.Serve != want {
		t.Fatalf("rendered and parsed back: %+v, %v\n%s", back.Serve, err, cfg.YAML())
	}
	if d := config.Default().Serve; d.Listen != "127.0.0.1:8787" || d.Upstream != "" || d.Recall {
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
	} {
		_, err := config.Parse([]byte(tc.yaml), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
