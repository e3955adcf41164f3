package redact

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// BenchmarkRedactFields redacts the recorded conversations as a compaction does: each string
// of each message (its content, a tool call's arguments, ...) alone, not the JSONL file whole,
// whose escaped quotes make every keyword look quoted once more.
func BenchmarkRedactFields(b *testing.B) {
	var texts []string
	size := 0
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			texts = append(texts, x)
			size += len(x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, f := range testdataFiles(b) {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var v any
			if json.Unmarshal(sc.Bytes(), &v) == nil {
				walk(v)
			}
		}
	}
	gitleaksRules()
	r := &Redactor{}
	b.SetBytes(int64(size))
	cpu0 := cpuNanos()
	for b.Loop() {
		for _, text := range texts {
			r.Redact(text)
		}
	}
	if cpu := cpuNanos() - cpu0; cpu > 0 {
		b.ReportMetric(float64(size)*float64(b.N)/(float64(cpu)/1e9)/1e6, "cpu-MB/s")
	}
}
