package redact

import (
	"errors"
	"strings"
	"testing"
)

// TestDefault: the default redaction is the built-in patterns'; a redactor that cannot be
// built withholds every text whole instead of letting one through.
func TestDefault(t *testing.T) {
	t.Parallel()
	secret := "OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6l"
	got := Default()(secret)
	want, _ := mustNew(t).Redact(secret)
	if got != want || strings.Contains(got, "sk-proj-") {
		t.Fatalf("Default()(%q) = %q, want the built-in patterns' %q", secret, got, want)
	}
	if plain := "nothing secret here"; Default()(plain) != plain {
		t.Fatalf("Default() changed a text without a secret: %q", Default()(plain))
	}
	failed := orWithhold(nil, errors.New("cannot compile"))
	for _, s := range []string{secret, "nothing secret here", ""} {
		if got := failed(s); got != Withheld {
			t.Errorf("a redactor that failed to build gave %q for %q, want %q", got, s, Withheld)
		}
	}
}

func mustNew(t *testing.T) *Redactor {
	t.Helper()
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
