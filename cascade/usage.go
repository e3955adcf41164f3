package cascade

import (
	"github.com/memcascade/memcascade/llm"
)

// Token counts made locally when a server sends no usage: messageOverhead tokens per chat
// message (role and separators, as OpenAI's chat format counts them) and replyPriming for
// the answer's start.
const (
	messageOverhead = 4
	replyPriming    = 3
)

// countText counts the tokens of s with the cascade's Count, else roughly: one token per four
// bytes, rounded up.
func (c *Cascade) countText(s string) int {
	if c.opt.Count != nil {
		return c.opt.Count(s)
	}
	return (len(s) + 3) / 4
}

// countRequest counts the tokens of a request's messages.
func (c *Cascade) countRequest(req llm.Request) int {
	n := replyPriming
	for _, m := range req.Messages {
		n += messageOverhead + c.countText(m.Content)
	}
	return n
}

// usage returns the tokens an attempt is recorded with, and whether they were counted
// locally. The server's usage is taken as it is when it sent any. Without it: an answer that
// came back (a success, or a 2xx answer that did not count) is counted from the request and
// the answer's text; a request cut by a timeout is counted from the request alone (the server
// may have read it); any other failure (an error status, a connection refused, a missing key)
// counts nothing, as the server refused or never saw the request.
func (c *Cascade) usage(req llm.Request, resp llm.Response, pe *ProviderError) (prompt, completion int, estimated bool) {
	if plausibleUsage(req, resp) {
		return resp.PromptTokens, resp.CompletionTokens, false
	}
	switch {
	case pe == nil, resp.Text != "", resp.HTTPStatus >= 200 && resp.HTTPStatus < 300:
		return c.countRequest(req), c.countText(resp.Text), true
	case pe.Class == ClassTimeout:
		return c.countRequest(req), 0, true
	}
	return 0, 0, false
}

// plausibleUsage reports whether a server's usage can be taken as it is: some tokens, none
// negative, and no more completion tokens than were asked for (when a bound was asked). A
// server that says otherwise is counted locally, as one that says nothing.
func plausibleUsage(req llm.Request, resp llm.Response) bool {
	if resp.PromptTokens < 0 || resp.CompletionTokens < 0 || resp.PromptTokens+resp.CompletionTokens == 0 {
		return false
	}
	return req.MaxTokens <= 0 || resp.CompletionTokens <= req.MaxTokens
}
