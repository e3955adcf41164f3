package memory

import (
	"database/sql"
	"math"
)

// Money is stored as integer micro-dollars (cost_micros columns; NULL: not priced) and shown
// as dollars. A cost is nil, omitted in JSON, when nothing it sums was priced: a provider or
// upstream without price_per_mtok has no cost, which is not a cost of 0.

// dollarsOf is micro-dollars as dollars; nil for NULL.
func dollarsOf(micros sql.NullInt64) *float64 {
	if !micros.Valid {
		return nil
	}
	d := float64(micros.Int64) / 1e6
	return &d
}

// sumOf is a sum of micro-dollars over priced rows, NULL when none was priced.
func sumOf(micros, priced int64) sql.NullInt64 {
	return sql.NullInt64{Int64: micros, Valid: priced > 0}
}

// addCosts adds two costs, NULL only when both are.
func addCosts(a, b sql.NullInt64) sql.NullInt64 {
	return sql.NullInt64{Int64: a.Int64 + b.Int64, Valid: a.Valid || b.Valid}
}

// microsOf is dollars as micro-dollars, rounded; NULL for nil, a negative or an impossible
// amount.
func microsOf(dollars *float64) sql.NullInt64 {
	if dollars == nil || !(*dollars >= 0) || *dollars > math.MaxInt64/1e6 {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(math.Round(*dollars * 1e6)), Valid: true}
}
