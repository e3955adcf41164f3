package config_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/memory"
)

// Named cascades are built beside the default one, each with the offline last rung unless
// offline: false, and given to the compactor under their names; compaction.cascade and
// part_cascade pick them.
func TestNamedCascadesBuilt(t *testing.T) {
	ctx := context.Background()
	h, err := db.OpenHandle(ctx, filepath.Join(t.TempDir(), "m.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	store, err := memory.New(ctx, h, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const yaml = `
cascade:
  - name: big
    model: gpt-4.1
cascades:
  cheap:
    - name: local
      model: qwen3
  mixed:
    - name: big
      model: gpt-4.1
    - name: x
      type: extractive
compaction:
  cascade: mixed
  part_cascade: cheap
`
	for _, tc := range []struct {
		offline string
		want    map[string][]string
	}{
		{"", map[string][]string{"cheap": {"local", "offline"}, "mixed": {"big", "x"}}},
		{"offline: false\n", map[string][]string{"cheap": {"local"}, "mixed": {"big", "x"}}},
	} {
		c, err := config.Parse([]byte(tc.offline+yaml), "c.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if s := c.Settings(); s.Cascade != "mixed" || s.PartCascade != "cheap" {
			t.Fatalf("settings name cascades %q and %q; want mixed and cheap", s.Cascade, s.PartCascade)
		}
		named, err := c.NewCascades(h, cascade.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(named) != len(tc.want) {
			t.Fatalf("%q: %d cascades; want %d", tc.offline, len(named), len(tc.want))
		}
		for name, want := range tc.want {
			var got []string
			for _, e := range named[name].Entries {
				got = append(got, e.Name)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%q: cascade %s has %q; want %q", tc.offline, name, got, want)
			}
		}
		comp, _, err := c.NewCompactor(h, store, cascade.Options{}, compact.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if got := comp.Cascades(); !slices.Equal(got, []string{"cheap", "mixed"}) {
			t.Errorf("the compactor knows cascades %q; want cheap and mixed", got)
		}
	}
}

// The errors of the cascades section and of the keys that name a cascade: each names the key,
// its line and the name at fault.
func TestNamedCascadeErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"compaction:\n  cascade: cheap\n", `c.yaml:2: compaction.cascade: "cheap" is not a cascade: the config defines default (the top-level cascade)`},
		{"cascades:\n  cheap:\n    - name: l\n      model: m\ncompaction:\n  part_cascade: chep\n", `c.yaml:6: compaction.part_cascade: "chep" is not a cascade: the config defines default (the top-level cascade), cheap`},
		{"compaction:\n  cascade: none\n", `c.yaml:2: compaction.cascade: "none" cannot be none: the summary needs a cascade`},
		{"cascades:\n  default:\n    - name: l\n      model: m\n", `c.yaml:2: cascades.default: "default" is reserved (default names the top-level cascade, none no part cascade)`},
		{"cascades:\n  cheap: []\n", `c.yaml:2: cascades.cheap: at least one provider is required`},
		{"cascades:\n  cheap:\n", `c.yaml:2: cascades.cheap: expected a list of providers, found null`},
		{"cascades:\n  cheap:\n    - name: l\n", `c.yaml:3: cascades.cheap[0].model: is required: name the model the server serves (e.g. model: llama3.2)`},
		{"cascades:\n  cheap:\n    - name: l\n      model: m\n    - name: l\n      model: n\n", `c.yaml:5: cascades.cheap[1].name: duplicate provider name "l" (also cascades.cheap[0] at line 3)`},
		{"cascades: [a]\n", `c.yaml:1: cascades: expected a mapping of cascade names to lists of providers, found a list`},
		{"cascades:\n  cheap:\n    - name: l\n      model: m\n      tipe: openai\n", `c.yaml:5: cascades.cheap[0].tipe: unknown key; did you mean type?`},
	} {
		_, err := config.Parse([]byte(tc.yaml), "c.yaml")
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.yaml, err, tc.want)
		}
	}
	// The same provider name in two cascades is allowed: it is one provider for its cooldown.
	if _, err := config.Parse([]byte("cascade:\n  - name: l\n    model: m\ncascades:\n  b:\n    - name: l\n      model: m\n"), "c.yaml"); err != nil {
		t.Errorf("a provider in two cascades: %v", err)
	}
}
