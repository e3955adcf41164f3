//go:build heavy

package compact_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/corpus"
)

// TestLifeMatrix replays every recorded conversation and two generated long ones at 2,048,
// 4,096, 8,192 and 32,768 tokens through each kind of summarizer (see simulateLife), and logs
// the figures docs/compaction.md gives:
//
//	go test -tags heavy -run TestLifeMatrix -v ./compact | grep LIFE
func TestLifeMatrix(t *testing.T) {
	lives := map[string][]chat.Message{
		"generated40":  generatedLife(40),
		"generated120": generatedLife(120),
	}
	for _, f := range corpus.Conversations(t) {
		lives[filepath.Base(f)] = corpus.ReadMessagesFile(t, f)
	}
	for name, msgs := range lives {
		for _, limit := range []int{2048, 4096, 8192, 32768} {
			for _, kind := range []string{"offline", "nofacts", "third"} {
				t.Run(fmt.Sprintf("%s/%d/%s", name, limit, kind), func(t *testing.T) {
					st := simulateLife(t, msgs, limit, kind)
					t.Logf("LIFE %s %d %s: turns %d, compactions %d (%.1f per 100 turns), failed %d; facts %d, actions %d (writes %d); kept %d, named %d, lost %d; writes kept %d, named %d; tokens per turn %d; newest user message out %d; summaries without sections %d",
						name, limit, kind, st.Turns, st.Compactions, 100*float64(st.Compactions)/float64(st.Turns), st.Failed,
						st.Facts, st.Actions, st.Writes, st.Kept, st.Named, st.Lost, st.WritesKept, st.WritesNamed,
						st.TokensSum/max(st.Turns, 1), st.NewestUserMissing, st.SectionsBroken)
					checkLife(t, st)
				})
			}
		}
	}
}
