package responses_test

import (
	"testing"
)

// BenchmarkParseCodexTurn: Codex's third turn read against its previous request, as serve
// reads each turn of a session.
func BenchmarkParseCodexTurn(b *testing.B) {
	prevBody, body := capture(b, "turn2-toolresult.json"), capture(b, "turn3.json")
	prev, err := d.Parse(prevBody, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Parse(body, prev.Sent); err != nil {
			b.Fatal(err)
		}
	}
}
