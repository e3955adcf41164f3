package serve_test

import (
	"testing"

	"github.com/memcascade/memcascade/serve"
)

// An agent that edits its first user message and regenerates resends a history no longer than
// the stored one: it contradicts the history and must be a conflict, not a new turn that
// stores the earlier assistant reply and user message a second time.
func TestReconcileEditedFirstMessageRegenerate(t *testing.T) {
	t.Parallel()
	history := msgs("system:S", "user:u1", "assistant:a1", "user:u2", "assistant:a2")
	for _, req := range [][]string{
		{"system:S", "user:u1 EDITED", "assistant:a1", "user:u2"},
		{"user:u1 EDITED", "assistant:a1", "user:u2"},
	} {
		got, c := serve.Reconcile(history, msgs(req...))
		if c == nil {
			t.Errorf("request %v: no conflict; new messages %q (stored again after the history)", req, texts(got))
		}
	}
}
