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

// TestAmountInRawJSONArguments: an amount a tool call's raw arguments carry ("amount":228, as
// the call shows in the active context) is kept there; a clock time (10:30) is still no amount.
func TestAmountInRawJSONArguments(t *testing.T) {
	amount := []Fact{{Kind: KindAmount, Text: "228"}}
	for _, s := range []string{`{"payment_methods":[{"amount":228,"payment_id":"gift_card_1"}]}`, `{"amount":228}`, `amount: 228`} {
		if !Kept(amount, s)[0] {
			t.Errorf("%q: the amount 228 is not found", s)
		}
	}
	if Kept([]Fact{{Kind: KindAmount, Text: "30"}}, "departs at 10:30")[0] {
		t.Error(`"departs at 10:30": the 30 of a clock time was read as the amount 30`)
	}
}

// TestShortCall: a write action's short line keeps its name, the ids it acted on and its
// outcome, cut; a call with no id keeps its first argument.
func TestShortCall(t *testing.T) {
	for _, c := range []struct {
		f    Fact
		want string
	}{
		{Fact{Kind: KindToolCall, Text: "update_reservation_flights(reservation_id=ABC123, cabin=business, payment_id=gift_card_1)", Outcome: "ok"},
			"update_reservation_flights(reservation_id=ABC123, payment_id=gift_card_1) -> ok"},
		{Fact{Kind: KindToolCall, Text: "send_certificate(user_id=mia_li_3668, amount=150)", Outcome: "Error: the payment method does not have enough balance"},
			"send_certificate(user_id=mia_li_3668) -> Error: the payment…"},
		{Fact{Kind: KindToolCall, Text: "bash(command=ls -F, a, b)"}, "bash(command=ls -F, a, b)"},
		{Fact{Kind: KindToolCall, Text: "submit()"}, "submit()"},
	} {
		if got := ShortCall(c.f); got != c.want {
			t.Errorf("ShortCall(%q) = %q, want %q", c.f.Text, got, c.want)
		}
	}
}
