package lifesim

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/memcascade/memcascade/memory"
)

// TestUnknownSummarizer: a kind outside Kinds is an error, not a silent default.
func TestUnknownSummarizer(t *testing.T) {
	s, err := memory.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Simulate(context.Background(), s, Generated(1), 4096, "thirds", nil); err == nil {
		t.Fatal("Simulate ran with an unknown summarizer")
	}
}

// TestStatsAdd: every figure is summed.
func TestStatsAdd(t *testing.T) {
	one := Stats{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, "first"}
	var sum Stats
	sum.Add(one)
	sum.Add(one)
	want := Stats{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, "first"}
	if sum != want {
		t.Fatalf("sum %+v, want %+v", sum, want)
	}
}
