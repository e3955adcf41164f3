package memory

import (
	"context"
	"errors"
)

// Prewarm makes ready, before a program serves, what the first appends of a burst would
// otherwise each wait for: the encoding new threads of the default model are counted with
// (Options.DefaultModel; a built-in vocabulary is parsed on first use, 0.1-0.4 s, and every
// append that counts with it waits for that) and conns connections of the database's pool
// (db.Handle.Prewarm). Errors are returned joined; what succeeded is kept.
func (s *Store) Prewarm(ctx context.Context, conns int) error {
	var errs []error
	if enc, _, err := s.newThreadEncoding(s.defaultModel); err != nil {
		errs = append(errs, err)
	} else if c, err := s.Counter(enc); err != nil {
		errs = append(errs, err)
	} else if l, ok := c.(interface{ Load() error }); ok {
		errs = append(errs, l.Load())
	}
	if conns > 0 {
		errs = append(errs, s.h.Prewarm(ctx, conns))
	}
	return errors.Join(errs...)
}
