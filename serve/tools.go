package serve

import (
	"sync"

	"github.com/memcascade/memcascade/serve/dialect"
	"github.com/memcascade/memcascade/tokencount"
)

// toolCounts remembers the tokens of the tool definitions requests send, by the dialect that
// read them, their bytes (dialect.Sent.ToolsHash) and the encoding: an agent sends the same
// definitions every turn, and counting them was a turn's largest cost (Claude Code's dozen
// tools, 32 KB, are 6,200 tokens: about 1 ms of CPU and 2,100 allocations to count). It keeps
// at most toolCountsKept, and starts over when full.
type toolCounts struct {
	mu sync.Mutex
	n  map[toolsKey]int
}

type toolsKey struct {
	dialect, encoding string
	hash              dialect.Hash
}

const toolCountsKept = 256

// countTools returns the tokens turn t's tools add to its prompt, as c counts them: counted
// once for the definitions as a dialect read them from the same bytes, and whenever the turn's
// tools are not the ones it read (the proxy's recall adds one).
func (s *Server) countTools(c tokencount.Counter, t dialect.Turn) int {
	sent := t.Sent
	if len(t.Tools) == 0 || sent == nil || sent.Dialect == "" || len(sent.Tools) != len(t.Tools) || &sent.Tools[0] != &t.Tools[0] {
		return c.CountTools(t.Tools)
	}
	k := toolsKey{sent.Dialect, c.Encoding(), sent.ToolsHash}
	tc := &s.toolCounts
	tc.mu.Lock()
	n, ok := tc.n[k]
	tc.mu.Unlock()
	if ok {
		return n
	}
	n = c.CountTools(t.Tools)
	tc.mu.Lock()
	if tc.n == nil || len(tc.n) >= toolCountsKept {
		tc.n = map[toolsKey]int{}
	}
	tc.n[k] = n
	tc.mu.Unlock()
	return n
}
