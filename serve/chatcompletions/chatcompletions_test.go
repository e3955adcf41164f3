package chatcompletions_test

import (
	"testing"

	"github.com/memcascade/memcascade/serve/chatcompletions"
	"github.com/memcascade/memcascade/serve/dialect/dialecttest"
)

// TestRenderAsSent: a turn whose active context is its request's messages, as sent, is
// forwarded as the request's own bytes (dialect.Turn.SentBody); the same turn rendered is the
// same request, and one with serve's note or a member changed is rendered.
func TestRenderAsSent(t *testing.T) {
	for name, body := range map[string]string{
		"plain": `{"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"hi"}],"temperature":0.2}`,
		"tools": `{"stream":false,"model":"gpt-4o","messages":[{"role":"user","content":"list /tmp"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"dir\":\"/tmp\"}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"a b"},{"role":"user","content":[{"type":"text","text":"and?"}]}],` +
			`"tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}]}`,
	} {
		t.Run(name, func(t *testing.T) { dialecttest.AsSent(t, chatcompletions.Dialect{}, []byte(body)) })
	}
}
