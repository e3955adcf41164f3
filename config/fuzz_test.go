package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memcascade/memcascade/config"
)

// FuzzParse checks that Parse never panics, and that a config it accepts
// passes Validate and survives a round trip through YAML().
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join(testdata, "*.yaml"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in %s: %v", testdata, err)
	}
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("cascade:\n  - &a {name: a}\n  - *a\n"))
	f.Add([]byte("compaction: {target_ratio: .5, trigger_ratio: 1}\nredact_patterns: ['\\d{4}']\n"))
	for _, b := range badConfigs {
		f.Add([]byte(b.yaml))
	}
	for _, s := range awkwardStrings {
		c := config.Default()
		c.Model = s + "m"
		f.Add(c.YAML())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data, "fuzz.yaml")
		if err != nil {
			problems(t, err) // every problem is a *config.Error
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that Validate rejects: %v\ninput:\n%s", err, data)
		}
		out := c.YAML()
		back, err := config.Parse(out, "fuzz.yaml")
		if err != nil {
			t.Fatalf("YAML() output does not parse: %v\ninput:\n%q\noutput:\n%s", err, data, out)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip changed the config\ninput:\n%q\noutput:\n%s\ngot  %#v\nwant %#v", data, out, back, c)
		}
	})
}
