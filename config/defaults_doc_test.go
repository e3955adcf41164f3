package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/memcascade/memcascade/config"
)

// TestDocumentedDefaults: the default column of docs/configuration.md's compaction and serve
// tables, and the defaults in config's package doc, are the values Default() renders: a default
// changed in the code and not in the reference (or the other way) fails here.
func TestDocumentedDefaults(t *testing.T) {
	var rendered struct {
		Compaction map[string]any `yaml:"compaction"`
		Serve      map[string]any `yaml:"serve"`
	}
	if err := yaml.Unmarshal(config.Default().YAML(), &rendered); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| `([^`|]*)` \\|")
	checked := 0
	for _, sec := range []struct {
		name string
		vals map[string]any
	}{{"compaction", rendered.Compaction}, {"serve", rendered.Serve}} {
		start := strings.Index(string(doc), "\n## "+sec.name+"\n")
		if start < 0 {
			t.Fatalf("docs/configuration.md has no section %s", sec.name)
		}
		body := string(doc)[start+1:]
		if end := strings.Index(body[3:], "\n## "); end >= 0 {
			body = body[:end+3]
		}
		for _, m := range row.FindAllStringSubmatch(body, -1) {
			v, ok := sec.vals[m[1]]
			if !ok {
				continue // a key rendered only when set
			}
			if got := yamlScalar(v); got != m[2] && !(m[2] == `""` && got == "") {
				t.Errorf("docs/configuration.md: %s.%s: default %q, Default() renders %q", sec.name, m[1], m[2], got)
			}
			checked++
		}
	}
	if checked < 15 {
		t.Fatalf("only %d documented defaults checked: the tables' form changed", checked)
	}

	// The package doc's example file: a valid config, whose compaction keys are the defaults.
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, "// # The file") {
			in = true
			continue
		}
		if in && strings.HasPrefix(l, "//\t") {
			lines = append(lines, strings.TrimPrefix(l, "//\t"))
		} else if in && len(lines) > 0 {
			break
		}
	}
	example := strings.Join(lines, "\n")
	if _, err := config.Parse([]byte(example), "doc.go"); err != nil {
		t.Fatalf("config's package doc: the example file does not parse: %v\n%s", err, example)
	}
	var ex struct {
		Compaction map[string]any `yaml:"compaction"`
	}
	if err := yaml.Unmarshal([]byte(example), &ex); err != nil {
		t.Fatal(err)
	}
	for k, v := range ex.Compaction {
		if got, want := yamlScalar(v), yamlScalar(rendered.Compaction[k]); got != want {
			t.Errorf("config's package doc: compaction.%s: %s, Default() renders %s", k, got, want)
		}
	}
}

// yamlScalar writes a decoded YAML scalar as the reference writes it.
func yamlScalar(v any) string {
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}
