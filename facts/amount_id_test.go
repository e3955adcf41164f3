package facts

import "testing"

// TestIDStartingWithCurrencyCodeIsNoAmount: a reservation code that starts with a currency
// code and a digit (INR4ZA) is an id, not the amount "INR4"; a compaction otherwise reports
// "INR4" left out while INR4ZA is in the context.
func TestIDStartingWithCurrencyCodeIsNoAmount(t *testing.T) {
	for _, s := range []string{`{"reservation_id": "INR4ZA"}`, `Reservation INR4ZA costs $1,200.`} {
		for _, f := range Extract([]Message{{Role: "tool", Content: s}}) {
			if f.Kind == KindAmount && f.Text == "INR4" {
				t.Errorf("%q: the id INR4ZA was read as the amount %q", s, f.Text)
			}
		}
	}
}
