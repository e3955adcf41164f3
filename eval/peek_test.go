package eval_test

import (
	"context"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
)

func TestPeek(t *testing.T) {
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", airline)
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 4000})
	c.Compact(context.Background(), "t", compact.Options{Force: true})
	a, _ := s.Active(context.Background(), "t")
	for _, e := range a.Entries {
		if e.CompactionID != 0 {
			t.Log(e.Message.Text())
		}
	}
}
