package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/memory"
)

func (a *app) importCommand() *cobra.Command {
	var model string
	var again bool
	cmd := &cobra.Command{
		Use:               "import THREAD FILE",
		ValidArgsFunction: a.completeThreads,
		Short:             "Append messages to a thread (all or nothing)",
		Long: `Append the messages of FILE to THREAD, creating the thread when new. FILE ("-" for stdin)
holds JSONL (one OpenAI chat message per line), a JSON array of messages, or an object
{"messages": [...]}. Every message is checked first; on any error nothing is written.

A FILE whose messages are already the thread's last messages (the same messages in the same
order, as after importing the same file twice) is refused (exit 2) unless --again. A file over
4 MB shows its progress on stderr when stderr is a terminal.`,
		Example: `  memctl import support-42 conversation.jsonl
  cat turn.json | memctl import support-42 - --model gpt-4.1`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.importThread(cmd.Context(), args[0], args[1], model, again)
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "the model whose tokenizer counts a new thread (default: the config's model)")
	cmd.Flags().BoolVar(&again, "again", false, "import even when the file's messages already end the thread")
	return cmd
}

func (a *app) importThread(ctx context.Context, thread, file, model string, again bool) error {
	if err := threadArg(thread); err != nil {
		return err
	}
	r, closeInput, err := openInput(a.stdin, file)
	if err != nil {
		return err
	}
	defer closeInput()
	s, err := a.open(ctx, forCreating)
	if err != nil {
		return err
	}
	if !again {
		if r, err = a.refuseRepeat(ctx, s, thread, file, r); err != nil {
			return err
		}
	}
	r = a.importProgress(r)
	res, err := s.Import(ctx, thread, bufio.NewReaderSize(r, 1<<20), memory.AppendOptions{Model: model})
	if p, ok := r.(*progressReader); ok {
		p.done()
	}
	if err != nil {
		return fmt.Errorf("import %s: %w", file, err)
	}
	if res.Warning != "" {
		fmt.Fprintf(a.errOut, "memctl: warning: %s\n", res.Warning)
	}
	t, err := s.Thread(ctx, thread)
	if err != nil {
		return err
	}
	return a.printResult(map[string]any{"thread": thread, "imported": res.Appended, "messages": t.Messages, "active_tokens": t.ActiveTokens},
		"imported %d messages into %s (%d messages, %d active tokens)\n", res.Appended, termLine(thread), t.Messages, t.ActiveTokens)
}

// spoolInput copies r to a private temporary file and returns it rewound. The file is unlinked
// at once where the system allows an open file to be (its data goes with the process);
// elsewhere (Windows) it is removed when memctl closes.
func (a *app) spoolInput(r io.Reader) (*os.File, error) {
	f, err := os.CreateTemp("", "memctl-import-*")
	if err != nil {
		return nil, err
	}
	if os.Remove(f.Name()) != nil {
		a.cleanup = append(a.cleanup, func() { f.Close(); os.Remove(f.Name()) })
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// refuseRepeat refuses (exit 2) a file whose messages already end thread, and returns a reader
// of the whole input again: the file rewound, or standard input as read.
func (a *app) refuseRepeat(ctx context.Context, s *memory.Store, thread, file string, r io.Reader) (io.Reader, error) {
	if _, err := s.Thread(ctx, thread); errors.Is(err, memory.ErrThreadNotFound) {
		return r, nil // a new thread: nothing to repeat
	} else if err != nil {
		return nil, err
	}
	f, seekable := r.(*os.File)
	if seekable {
		_, err := f.Seek(0, io.SeekCurrent)
		seekable = err == nil
	}
	if !seekable {
		// Standard input is read twice: spooled to a private temporary file, so the memory an
		// import takes stays bounded by its largest message, not by the input.
		spool, err := a.spoolInput(r)
		if err != nil {
			return nil, usageError{fmt.Errorf("read %s: %w", file, err)}
		}
		r = spool
	}
	repeat, err := s.EndsWith(ctx, thread, r)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", file, err)
	}
	if repeat {
		return nil, usagef("import %s: its messages are already the last messages of thread %s (imported before?); nothing written: add --again to append them once more", file, thread)
	}
	if _, err := r.(io.Seeker).Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("import %s: rewind: %w", file, err)
	}
	return r, nil
}

// progressBytes: a file over this size shows import progress on a terminal.
const progressBytes = 4 << 20

// importProgress wraps r, a file over progressBytes, to show the bytes read on stderr when
// stderr is a terminal; otherwise it returns r.
func (a *app) importProgress(r io.Reader) io.Reader {
	f, ok := r.(*os.File)
	if !ok || !terminal(a.stderr) {
		return r
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() <= progressBytes {
		return r
	}
	return &progressReader{r: f, total: st.Size(), w: a.stderr}
}

// progressReader shows on w, one line rewritten in place, how much of total was read.
type progressReader struct {
	r           io.Reader
	w           io.Writer
	read, shown int64
	total       int64
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	if p.read-p.shown >= 1<<20 || (err == io.EOF && p.read != p.shown) {
		p.shown = p.read
		fmt.Fprintf(p.w, "\rmemctl: import: read %s of %s", byteSize(p.read), byteSize(p.total))
	}
	return n, err
}

// done ends the progress line.
func (p *progressReader) done() {
	if p.shown > 0 {
		fmt.Fprintln(p.w)
	}
}
