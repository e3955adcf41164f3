package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// jsonDocs is the reference of memctl's --json output, made from the golden files that
// TestGolden checks against the real output of every command.
var jsonDocs = filepath.Join("..", "..", "docs", "json.md")

// TestJSONReferenceCurrent fails when docs/json.md differs from what the golden files hold.
// go test ./cmd/memctl -run 'TestGolden|TestJSONReferenceCurrent' -update rewrites both.
func TestJSONReferenceCurrent(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("# JSON output\n\n" +
		"Every command takes `--json` and then writes one JSON value on stdout; the inspection API of\n" +
		"`memctl serve` answers with the same shapes. Below, each command as the tests run it on recorded\n" +
		"conversations (times and durations zeroed, arrays cut to their first element, long strings cut\n" +
		"with `…`). Generated from `cmd/memctl/testdata/golden` by `go test ./cmd/memctl -run\n" +
		"TestJSONReferenceCurrent -update`; the test fails when this file is stale.\n\n" +
		"Money appears only where a price is set (`price_per_mtok` of a provider or of serve's upstream:\n" +
		"see configuration.md), in dollars: `cost` on an attempt, on a report's `usage`, on a thread\n" +
		"(with `compaction_cost`) and on its `upstream`. A cost that nothing priced is omitted, never 0;\n" +
		"the examples below have no price, so no cost.\n")
	for _, st := range goldenSteps() {
		if !strings.HasSuffix(st.name, "-json") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("testdata", "golden", st.name+".stdout"))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		out, err := json.MarshalIndent(shorten(v), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		args := make([]string, len(st.args))
		for i, a := range st.args {
			if strings.Contains(a, string(filepath.Separator)+"testdata"+string(filepath.Separator)) {
				a = "testdata/" + filepath.ToSlash(a[strings.LastIndex(a, "testdata")+len("testdata/"):])
			}
			args[i] = a
		}
		exit := ""
		if st.code != 0 {
			exit = fmt.Sprintf(" (exit %d)", st.code)
		}
		fmt.Fprintf(&b, "\n## memctl %s%s\n\n```json\n%s\n```\n", strings.Join(args, " "), exit, out)
	}
	got := []byte(b.String())
	if *update {
		if err := os.WriteFile(jsonDocs, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(jsonDocs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, got) {
		t.Error("docs/json.md is stale: regenerate with go test ./cmd/memctl -run TestJSONReferenceCurrent -update")
	}
}

// shorten keeps the first element of each array and cuts strings over 160 bytes.
func shorten(v any) any {
	switch x := v.(type) {
	case []any:
		if len(x) > 1 {
			x = x[:1]
		}
		for i := range x {
			x[i] = shorten(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = shorten(x[k])
		}
		return x
	case string:
		if len(x) > 160 {
			cut := 160
			for cut > 0 && x[cut]&0xC0 == 0x80 {
				cut--
			}
			return x[:cut] + "…"
		}
	}
	return v
}
