package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
)

// EndsWith reads the messages in r (any form Import takes) and reports whether they are
// already the last messages of thread: the same messages, in the same order, at its end. An
// unknown thread ends with nothing. It lets a caller refuse to import the same file twice.
// Messages are compared by their JSON form, as Export prints them.
func (s *Store) EndsWith(ctx context.Context, thread string, r io.Reader) (bool, error) {
	var sums [][32]byte
	err := readMessages(r, func(m chat.Message, _ []byte, _ int) error {
		b, err := m.MarshalJSON()
		if err != nil {
			return err
		}
		sums = append(sums, sha256.Sum256(b))
		return nil
	})
	if err != nil {
		return false, err
	}
	t, err := s.Thread(ctx, thread)
	if errors.Is(err, ErrThreadNotFound) {
		return false, nil
	}
	if err != nil || len(sums) == 0 || len(sums) > t.Messages {
		return false, err
	}
	// Only the thread's last len(sums) messages are read: the check costs what the input
	// holds, not the history.
	rows, err := s.h.Q().ListMessagesBetween(ctx, db.ListMessagesBetweenParams{
		ThreadID: thread, FromSeq: int64(t.Messages - len(sums) + 1), ToSeq: int64(t.Messages)})
	if err != nil {
		return false, err
	}
	tail, err := entries(rows)
	if err != nil || len(tail) != len(sums) {
		return false, err
	}
	for i, e := range tail {
		b, err := e.Message.MarshalJSON()
		if err != nil {
			return false, err
		}
		if sum := sha256.Sum256(b); !bytes.Equal(sum[:], sums[i][:]) {
			return false, nil
		}
	}
	return true, nil
}
