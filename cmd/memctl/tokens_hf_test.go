package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/internal/hftest"
)

// TestTokensHFConfig runs memctl with encoding_file naming the tokenizer.json of Qwen 3 (by a
// path relative to the config file) and of Llama 3 (by an absolute path): tokens counts every
// recorded conversation as the reference vectors do, import records the file's encoding and
// the same count, and encoding_pattern beside a tokenizer.json is refused.
func TestTokensHFConfig(t *testing.T) {
	v, err := hftest.ReadVectors()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"qwen3", "llama3"} {
		t.Run(name, func(t *testing.T) {
			path, sum := hftest.TokenizerFile(t, name)
			m := newMemctl(t)
			m.config = filepath.Join(m.dir, "config.yaml")
			if name == "qwen3" {
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				os.MkdirAll(filepath.Join(m.dir, "models"), 0o700)
				if err := os.WriteFile(filepath.Join(m.dir, "models", "tokenizer.json"), data, 0o600); err != nil {
					t.Fatal(err)
				}
				path = "models/tokenizer.json"
			}
			os.WriteFile(m.config, []byte("model: local\nencoding_file: "+path+"\n"), 0o600)
			encoding := "file:" + sum[:16]
			totals := map[string]int{}
			for _, vv := range v.Variants {
				if vv.Name == name {
					for _, c := range vv.Messages {
						totals[c.File] = c.Total
					}
				}
			}
			for i, conv := range conversationFiles(t) {
				want, ok := totals[filepath.Base(conv)]
				if !ok {
					t.Fatalf("no vectors for %s", conv)
				}
				var res struct {
					PromptTokens int    `json:"prompt_tokens"`
					Encoding     string `json:"encoding"`
				}
				if err := json.Unmarshal([]byte(m.must("tokens", "--json", conv)), &res); err != nil {
					t.Fatal(err)
				}
				if res.PromptTokens != want || res.Encoding != encoding {
					t.Errorf("tokens %s: %+v, want %d tokens of %s", filepath.Base(conv), res, want, encoding)
				}
				if i == 0 {
					var imp struct {
						ActiveTokens int `json:"active_tokens"`
					}
					json.Unmarshal([]byte(m.must("import", "t1", conv, "--json")), &imp)
					var threads []struct {
						Encoding string `json:"encoding"`
					}
					json.Unmarshal([]byte(m.must("threads", "--json")), &threads)
					if imp.ActiveTokens != want || len(threads) != 1 || threads[0].Encoding != encoding {
						t.Errorf("import %s: %d active tokens, threads %+v; want %d tokens of %s", filepath.Base(conv), imp.ActiveTokens, threads, want, encoding)
					}
				}
			}
			os.WriteFile(m.config, []byte("model: local\nencoding_file: "+path+"\nencoding_pattern: '\\S+'\n"), 0o600)
			if code, _, errs := m.run("tokens", conversationFiles(t)[0]); code == 0 || !strings.Contains(errs, "encoding_file") || !strings.Contains(errs, "tokenizer.json") {
				t.Errorf("encoding_pattern with a tokenizer.json: exit %d %q, want a refusal naming encoding_file", code, errs)
			}
		})
	}
}
