package compact

import (
	"context"
	"errors"

	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/transcript"
)

// ProviderView returns es, consecutive entries of one thread, as a summarizing provider
// reads them: what only the sequence shows redacted first (redact.Context: a bare value
// typed in reply to a request for a password, PIN, token or key; a token cut in two by the
// end of a message or content part), then each field (text, name, tool_call_id, each tool
// call's id, name and arguments) with c.Redact. A message's secret that needs its neighbours
// to be seen is found only when they are among es: give the message before and the message
// after the ones to show (ReadProviderView reads them).
func (c *Compactor) ProviderView(es []memory.Entry) []transcript.Message {
	red := c.Redact
	if red == nil {
		red = func(s string) string { return s }
	}
	return transcriptMessages(es, red)
}

// ReadProviderView returns the entries es (consecutive messages of thread, as the store gave
// them) as a provider reads them (ProviderView), read with the message before the first and
// the one after the last, so that what only the conversation shows is redacted as a
// compaction redacts it. The answer has one message per entry of es, in its order.
func (c *Compactor) ReadProviderView(ctx context.Context, thread string, es []memory.Entry) ([]transcript.Message, error) {
	if len(es) == 0 {
		return nil, nil
	}
	all := make([]memory.Entry, 0, len(es)+2)
	first, last := es[0].Seq, es[len(es)-1].Seq
	if first > 1 {
		prev, err := c.Store.Messages(ctx, thread, first-1, first-1, memory.ReadOptions{Light: true})
		if err != nil && !errors.Is(err, memory.ErrMessageNotFound) {
			return nil, err
		}
		all = append(all, prev...)
	}
	lead := len(all)
	all = append(all, es...)
	next, err := c.Store.Messages(ctx, thread, last+1, last+1, memory.ReadOptions{Light: true})
	if err != nil && !errors.Is(err, memory.ErrMessageNotFound) {
		return nil, err
	}
	all = append(all, next...)
	return c.ProviderView(all)[lead : lead+len(es)], nil
}
