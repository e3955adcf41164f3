package db

import "context"

// EachMessageColumnsBetween calls fn with each row of ListMessageColumnsBetween, in order, as
// it is read. On SQLite (q a *Queries) the rows are not gathered into a slice first: sqlc's
// slice grows by copies, which for a long range allocate about twice the rows' own size, all
// of it garbage once the rows are decoded. Another Querier reads them with
// ListMessageColumnsBetween. An error of fn ends the read and is returned.
func EachMessageColumnsBetween(ctx context.Context, q Querier, arg ListMessageColumnsBetweenParams, fn func(ListMessageColumnsBetweenRow) error) error {
	qs, ok := q.(*Queries)
	if !ok {
		rows, err := q.ListMessageColumnsBetween(ctx, arg)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	// The statement and scan of ListMessageColumnsBetween (messages.sql.gen.go).
	rows, err := qs.query(ctx, qs.listMessageColumnsBetweenStmt, listMessageColumnsBetween, arg.ThreadID, arg.FromSeq, arg.ToSeq)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var i ListMessageColumnsBetweenRow
		if err := rows.Scan(&i.Seq, &i.Role, &i.Content, &i.Name, &i.ToolCalls, &i.ToolCallID, &i.Tokens); err != nil {
			return err
		}
		if err := fn(i); err != nil {
			return err
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}
