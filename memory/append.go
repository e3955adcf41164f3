package memory

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"unicode/utf8"
	"unsafe"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/jsontext"
	"github.com/memcascade/memcascade/tokencount"
)

// AppendOptions set how a thread is created by its first append.
type AppendOptions struct {
	// Model is the model whose tokenizer counts a new thread (default Options.DefaultModel). It is
	// ignored for an existing thread.
	Model string
	// Settings, when set, are the settings of the thread the append creates (a JSON object,
	// as Store.SetThreadSettings stores them), written with it in the append's transaction.
	// They are ignored for an existing thread.
	Settings json.RawMessage
	// Reply, when set, is what the upstream reported of the prompt the appended reply answers:
	// it is added to the thread's counts (Thread.Upstream) in the append's transaction.
	Reply *ReplyUsage
	// Live asks for what a host that keeps the thread (memctl serve) needs to follow it
	// without reading it again: AppendResult's Entries, Raw, Before, After and Read. Concurrent
	// live appends are committed together on SQLite (group commit), each all or nothing.
	Live bool
	// Expect, with Live, makes the append only when the thread's active context is that of
	// *Expect (Version.SameContext; a Version with Found false: the thread does not exist
	// yet); otherwise Append returns ErrStale and writes nothing.
	Expect *Version
}

// ReplyUsage is what an upstream model reported of the prompts of replies: of one reply (an
// append's), or summed over a thread's (Thread.Upstream, with Replies counting them).
type ReplyUsage struct {
	Replies      int `json:"replies"`
	PromptTokens int `json:"prompt_tokens"` // cached tokens included
	CachedTokens int `json:"cached_tokens"` // read from the upstream's prompt cache
	// CachedShare is CachedTokens / PromptTokens, rounded to three places (0 for none), as a
	// thread shows it; an append's is ignored.
	CachedShare float64 `json:"cached_share"`
	// Cost is what the replies cost in dollars at the upstream's price (memctl serve's
	// price_per_mtok), stored to the micro-dollar; nil (omitted in JSON): none was priced.
	Cost *float64 `json:"cost,omitempty"`
}

// AppendResult says what an append did.
type AppendResult struct {
	Thread   string
	Appended int   // messages written by this call
	FirstSeq int64 // seq of the first of them
	LastSeq  int64 // seq of the last of them: also the thread's message count
	Created  bool  // the call created the thread
	// Warning is set when the thread was created for a model the tokenizer does not know
	// (counted with o200k_base).
	Warning string

	// The rest is set by a live append only (AppendOptions.Live).

	// Entries are the entry of each message (its seq, tokens and message), and Raw the stored
	// JSON of each: its encoding in a chat completions request.
	Entries []Entry
	Raw     []json.RawMessage
	// Before and After are the thread's version before and after the append.
	Before, After Version
	// Read is, when the append created the thread, the thread as a live read (ReadOptions.Live)
	// reads it after the append: a host need not read it. It is made from what the append
	// wrote, not read back (a new thread's active context is its messages), and its History
	// and Entries hold the messages as given to Append.
	Read *Active
}

// Append appends msgs to a thread, creating it when it does not exist. It is all-or-nothing:
// every message is validated (roles, tool calls answered in order, ids not repeated while
// unanswered) against the thread's history before anything is written; an *InputError names
// the first bad message. Token counts are computed once, here, and stored.
func (s *Store) Append(ctx context.Context, thread string, msgs []chat.Message, opt AppendOptions) (AppendResult, error) {
	if len(msgs) == 0 {
		return AppendResult{}, fmt.Errorf("append to %q: %w", thread, errNoMessages)
	}
	if opt.Live {
		return s.appendLive(ctx, thread, msgs, opt)
	}
	return s.write(ctx, thread, opt, func(add func(chat.Message, []byte, int) error) error {
		for _, m := range msgs {
			if err := add(m, nil, 0); err != nil {
				return err
			}
		}
		return nil
	})
}

// Import appends the messages read from r to a thread, all or nothing, reading r as a stream
// (a large file is never held in memory whole). r holds JSONL (one message per line), a JSON
// array of messages, or an object {"messages": [...]}. Errors name the line (JSONL) or index.
//
// Memory follows the largest message, not the input: while a message is written the Go heap
// holds its stored JSON and its text (about twice its size), SQLite its copies of both and the
// row it builds from them (about four times), and indexing it for search the terms of its text.
// A message of 8 MB or more has its garbage returned to the system before and after it is
// written (two forced collections of the whole process: see releaseMemory).
func (s *Store) Import(ctx context.Context, thread string, r io.Reader, opt AppendOptions) (AppendResult, error) {
	consumed := false
	return s.write(ctx, thread, opt, func(add func(chat.Message, []byte, int) error) error {
		if consumed {
			// The transaction is being retried after the input was read: it cannot be read again.
			return errors.New("import: database busy after the input was read; nothing was written")
		}
		consumed = true
		return readMessages(r, add)
	})
}

// write runs one append transaction: produce calls add for each message in order.
func (s *Store) write(ctx context.Context, thread string, opt AppendOptions, produce func(add func(m chat.Message, raw []byte, line int) error) error) (AppendResult, error) {
	if err := checkThreadID(thread); err != nil {
		return AppendResult{}, err
	}
	var res AppendResult
	// The thread row is locked first: appends to one thread, from any process or host, run
	// one after another.
	err := s.h.LockedTx(ctx, func(q db.Querier) (err error) {
		res, err = s.appendTx(ctx, q, thread, opt, produce)
		return err
	})
	if err != nil {
		return AppendResult{}, fmt.Errorf("append to %q: %w", thread, err)
	}
	return res, nil
}

// checkThreadID refuses a thread id an append cannot create (ValidThreadID).
func checkThreadID(thread string) error {
	if err := ValidThreadID(thread); err != nil {
		return fmt.Errorf("append: %w", err)
	}
	return nil
}

// appendTx is the work of write within transaction q.
func (s *Store) appendTx(ctx context.Context, q db.Querier, thread string, opt AppendOptions, produce func(add func(m chat.Message, raw []byte, line int) error) error) (AppendResult, error) {
	return s.appendRows(ctx, q, thread, opt, produce, nil, nil)
}

// appendRows is appendTx; kept, when set, is given the stored JSON and the token count of each
// message written; row, when set, is set to the thread's row as the append found or created
// it (before its new tail).
func (s *Store) appendRows(ctx context.Context, q db.Querier, thread string, opt AppendOptions, produce func(add func(m chat.Message, raw []byte, line int) error) error, kept func(raw string, tokens int), row *db.Thread) (AppendResult, error) {
	res := AppendResult{Thread: thread}
	err := func() error {
		now := s.now()
		t, err := q.LockThread(ctx, thread)
		if errors.Is(err, sql.ErrNoRows) {
			if t, res.Warning, err = s.createThread(ctx, q, thread, opt.Model, opt.Settings, now); err != nil {
				return err
			}
			res.Created = true
		} else if err != nil {
			return err
		}
		if row != nil {
			*row = t
		}
		ap := &appender{ctx: ctx, q: q, thread: thread, now: now, seq: t.LastSeq, kept: kept}
		if ap.counter, err = s.Counter(t.Encoding); err != nil {
			return err
		}
		var stillOpen []string
		if err := json.Unmarshal([]byte(t.OpenCalls), &stillOpen); err != nil {
			return fmt.Errorf("thread %q: stored open calls: %w", thread, err)
		}
		ap.calls.load(stillOpen)
		ap.stored = t.LastSeq
		res.FirstSeq = t.LastSeq + 1
		if err := produce(ap.add); err != nil {
			return err
		}
		if ap.seq == t.LastSeq {
			return errNoMessages
		}
		open, _ := json.Marshal(ap.calls.open) // a []string always marshals
		if ap.calls.open == nil {
			open = []byte("[]")
		}
		res.Appended, res.LastSeq = int(ap.seq-t.LastSeq), ap.seq
		if u := opt.Reply; u != nil {
			err := q.AddReplyUsage(ctx, db.AddReplyUsageParams{PromptTokens: int64(u.PromptTokens), CachedTokens: int64(u.CachedTokens),
				CostMicros: microsOf(u.Cost), ID: thread})
			if err != nil {
				return err
			}
		}
		return q.SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: ap.seq, OpenCalls: string(open), UpdatedAt: now, ID: thread})
	}()
	return res, err
}

// appender writes the messages of one append transaction, one at a time. They are indexed for
// search after the commit (db.Handle.IndexPending), not in the transaction.
type appender struct {
	ctx     context.Context
	q       db.Querier
	thread  string
	now     int64
	counter tokencount.Counter
	calls   callTracker
	seq     int64 // the last seq written
	index   int   // the index of the next message in the input
	stored  int64 // the thread's last seq before the append
	kept    func(raw string, tokens int)
}

// inFlight returns the calls the thread's stored messages leave in flight, and the seq of the
// message that made them: the calls of its last assistant message with calls when only tool
// results follow it; none when another message follows it. It reads the stored messages back
// from the end, a few at a time (see callTracker.keepInherited).
func (ap *appender) inFlight() ([]string, int64, error) {
	const chunk = 8
	for to := ap.stored; to >= 1; to -= chunk {
		rows, err := ap.q.ListMessageColumnsBetween(ap.ctx, db.ListMessageColumnsBetweenParams{ThreadID: ap.thread, FromSeq: max(to-chunk+1, 1), ToSeq: to})
		if err != nil {
			return nil, 0, err
		}
		es, err := lightEntries(ap.thread, rows)
		if err != nil {
			return nil, 0, err
		}
		for i := len(es) - 1; i >= 0; i-- {
			m := es[i].Message
			switch {
			case m.Role == chat.RoleTool:
				continue
			case m.Role == chat.RoleAssistant && len(m.ToolCalls) > 0:
				ids := make([]string, len(m.ToolCalls))
				for j, c := range m.ToolCalls {
					ids[j] = c.ID
				}
				return ids, es[i].Seq, nil
			}
			return nil, 0, nil
		}
	}
	return nil, 0, nil
}

// add writes message m, read at line of the input (0: not read from lines); raw is its JSON as
// the import read it, compact (see decodeLine), or nil for a message made otherwise.
func (ap *appender) add(m chat.Message, raw []byte, line int) error {
	defer func() { ap.index++ }()
	if m.Role != chat.RoleTool && ap.calls.inherited() {
		ids, seq, err := ap.inFlight()
		if err != nil {
			return err
		}
		ap.calls.keepInherited(ids, seq)
	}
	if field, msg := ap.calls.check(m, ap.index); msg != "" {
		return &InputError{Line: line, Index: ap.index, Field: field, Msg: msg}
	}
	row, err := storedForm(m, raw, ap.counter)
	if err != nil {
		return &InputError{Line: line, Index: ap.index, Msg: err.Error()}
	}
	if ap.kept != nil {
		ap.kept(row.raw, row.tokens)
	}
	m.Content = nil // the stored form holds what is needed: let a large content go
	size := len(row.raw)
	if size >= largeMessage {
		// Before SQLite copies the row into memory of its own.
		releaseMemory()
	}
	ap.seq++
	arg := db.InsertMessageParams{
		ThreadID: ap.thread, Seq: ap.seq, Role: m.Role,
		Content:    nullString(row.text),
		Name:       nullString(m.Name),
		ToolCalls:  nullString(row.toolCalls),
		ToolCallID: nullString(m.ToolCallID),
		Raw:        row.raw, Tokens: int64(row.tokens), CreatedAt: ap.now,
	}
	// Past here arg holds the text and the stored JSON (raw, an import's line, is its caller's
	// last use of it; kept, when set, may keep the stored JSON): InsertLargeMessage can let
	// them go.
	row, raw = stored{}, nil
	if err := ap.insert(&arg, size >= largeMessage); err != nil {
		return err
	}
	if size >= largeMessage {
		releaseMemory()
	}
	return nil
}

// insert writes the message of arg; a large one through db.LargeMessageInserter where the
// Querier has it, which takes arg's text and stored JSON.
func (ap *appender) insert(arg *db.InsertMessageParams, large bool) error {
	if l, ok := ap.q.(db.LargeMessageInserter); ok && large {
		return l.InsertLargeMessage(ap.ctx, arg)
	}
	return ap.q.InsertMessage(ap.ctx, *arg)
}

// createThread creates thread id for model with settings (nil: none) and locks it.
func (s *Store) createThread(ctx context.Context, q db.Querier, id, model string, settings json.RawMessage, now int64) (db.Thread, string, error) {
	if model == "" {
		model = s.defaultModel
	}
	if msg := badIdentifier(model); msg != "" {
		return db.Thread{}, "", fmt.Errorf("model %q %s", model, msg)
	}
	set := "{}"
	if settings != nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(settings, &obj); err != nil || obj == nil {
			return db.Thread{}, "", fmt.Errorf("thread %q: settings must be a JSON object", id)
		}
		set = string(settings)
	}
	enc, known, err := s.newThreadEncoding(model)
	if err != nil {
		return db.Thread{}, "", err
	}
	warning := ""
	if !known {
		warning = fmt.Sprintf("the tokenizer does not know model %q: counting with %s", model, enc)
	}
	n, err := q.InsertThread(ctx, db.InsertThreadParams{ID: id, Model: model, Encoding: enc, Metadata: "{}", Settings: set, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return db.Thread{}, "", err
	}
	if n == 0 {
		// Another writer created it meanwhile (the insert waited for it): run again, as an
		// append to an existing thread.
		return db.Thread{}, "", errThreadRace
	}
	t, err := q.LockThread(ctx, id)
	return t, warning, err
}

// errThreadRace ends an append transaction that found the thread missing and then lost the race
// to create it; the store runs the transaction again (see Handle.Retryable).
var errThreadRace = db.ErrRetry

// largeMessage is the stored size from which a message's garbage is handed back to the system
// before and after it is written (see releaseMemory).
const largeMessage = 8 << 20

// releaseMemory collects garbage and returns it to the system. An append calls it twice for a
// message of largeMessage bytes or more: before the insert, when the input line and the
// decoded content are garbage and only the stored JSON and text remain (SQLite is about to
// copy both into memory of its own, outside the Go heap), and after it, when those are garbage
// too (full-text indexing the message allocates SQLite memory again, and reading the next
// message allocates its own). Without it the Go heap keeps that garbage until it doubles, and
// the peak of one import was 12 times its largest message. It costs two collections per such
// message: milliseconds, next to the seconds a message of that size takes to count and write.
func releaseMemory() { debug.FreeOSMemory() }

// stored is a message as the messages table keeps it.
type stored struct {
	// raw is the message's JSON, compact: an import's input as it holds it (see decodeLine),
	// else MarshalJSON's, with HTML characters escaped as encoding/json does.
	raw    string
	text   string // Message.Text
	tokens int
	// toolCalls is the tool_calls column: the calls as json.Marshal writes them ("": none).
	toolCalls string
}

// storedForm computes what the messages table keeps of m, each in one copy: a message of tens
// of megabytes is encoded once (or not at all: an imported message stores raw, its input, see
// decodeLine; nil raw stores m's MarshalJSON), its text decoded once, and the text counted
// where it was decoded instead of being decoded again.
func storedForm(m chat.Message, raw []byte, counter tokencount.Counter) (stored, error) {
	if raw != nil {
		row := storedText(m, raw, counter)
		row.toolCalls = toolCallsColumn(m.ToolCalls)
		return row, nil
	}
	raw, err := m.MarshalJSON()
	if err != nil {
		return stored{}, err
	}
	if !jsontext.IsCompact(raw) || !json.Valid(raw) {
		// Content given to Append as it pleased: json.Marshal would compact and check it.
		var buf bytes.Buffer
		buf.Grow(len(raw))
		if err := json.Compact(&buf, raw); err != nil {
			return stored{}, fmt.Errorf("content or an extra field is not valid JSON: %w", err)
		}
		raw = buf.Bytes()
	}
	if bytes.ContainsAny(raw, "<>&\u2028\u2029") {
		// What json.Marshal writes: the stored JSON stays byte for byte what it was.
		var buf bytes.Buffer
		buf.Grow(len(raw) + len(raw)/8)
		json.HTMLEscape(&buf, raw)
		raw = buf.Bytes()
	}
	row := storedText(m, raw, counter)
	row.toolCalls = toolCallsJSON(m.ToolCalls)
	return row, nil
}

// storedText completes the stored form of m from its stored JSON: the text and the count.
func storedText(m chat.Message, raw []byte, counter tokencount.Counter) stored {
	// raw is never written again: the string shares its bytes instead of copying them.
	row := stored{raw: unsafe.String(unsafe.SliceData(raw), len(raw))}
	text, ok := sharedText(m.Content, raw)
	if !ok {
		text, ok = jsontext.StringValue(m.Content)
	}
	if ok {
		row.text = text
		row.tokens = tokencount.CountMessageWithText(counter, m, text)
	} else {
		row.text = m.Text()
		row.tokens = counter.CountMessage(m)
	}
	row.text = db.MakeStorable(row.text) // the searchable, summarized copy; raw keeps the message exactly
	return row
}

// sharedText returns the text of content, a JSON string, as a string over its own bytes when
// content lies within raw (the stored JSON, never written again) and its text is those bytes as
// written: no escape, valid UTF-8. A message of base64 or of one long word then holds its text
// once, in the stored JSON, not twice. ok is false otherwise (the text is decoded into a copy).
func sharedText(content json.RawMessage, raw []byte) (string, bool) {
	if len(content) < 2 || content[0] != '"' || content[len(content)-1] != '"' || len(raw) == 0 {
		return "", false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(content)))
	if at < start || at+uintptr(len(content)) > start+uintptr(len(raw)) {
		return "", false
	}
	body := content[1 : len(content)-1]
	ascii := true
	for _, c := range body {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	if !ascii && !utf8.Valid(body) {
		return "", false
	}
	return unsafe.String(unsafe.SliceData(body), len(body)), true
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func toolCallsJSON(calls []chat.ToolCall) string {
	if len(calls) == 0 {
		return ""
	}
	b, _ := json.Marshal(calls) // tool calls always marshal
	return string(b)
}

// readMessages reads JSONL, a JSON array of messages or {"messages": [...]} from r as a stream
// and calls add for each message with its stored JSON (see decodeLine) and its line (JSONL) or
// 0.
func readMessages(r io.Reader, add func(chat.Message, []byte, int) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	first, err := firstByte(br)
	if err == io.EOF {
		return &InputError{Msg: "the input holds no message (it is empty)"}
	}
	if err != nil {
		return err
	}
	switch first {
	case '[':
		return streamArray(br, false, add)
	case '{':
		head, _ := br.Peek(br.Size())
		if n := messagesHead(head); n > 0 {
			br.Discard(n)
			return streamArray(br, true, add)
		}
		if isMessagesObject(head) {
			return decodeArray(json.NewDecoder(br), true, 0, false, add)
		}
		return readJSONL(br, add)
	default:
		return &InputError{Line: 1, Msg: fmt.Sprintf("not a message: the input starts with %q (want JSONL, a JSON array of messages or {\"messages\": [...]})", first)}
	}
}

// firstByte returns the first byte that is not white space (or a UTF-8 byte order mark)
// without consuming it.
func firstByte(br *bufio.Reader) (byte, error) {
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
	}
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b, br.UnreadByte()
	}
}

// isMessagesObject reports whether an object's first key is "messages".
func isMessagesObject(head []byte) bool {
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("{")), " \t\r\n")
	return bytes.HasPrefix(head, []byte(`"messages"`))
}

func expectMessagesKey(dec *json.Decoder) error {
	for _, want := range []any{json.Delim('{'), "messages"} {
		tok, err := dec.Token()
		if err != nil || tok != want {
			return &InputError{Msg: "malformed JSON object: want {\"messages\": [...]}"}
		}
	}
	return nil
}

// decodeArray reads with dec an input that holds an array of messages, as a JSON array or
// (object) {"messages": [...]}: the array, what follows it and the end of the input. n0
// messages were read before (by streamArray); standIn says the array's first element stands
// for them and is skipped.
func decodeArray(dec *json.Decoder, object bool, n0 int, standIn bool, add func(chat.Message, []byte, int) error) error {
	if object {
		if err := expectMessagesKey(dec); err != nil {
			return err
		}
	}
	n, err := readArray(dec, add, n0, standIn)
	if err != nil {
		return err
	}
	if object {
		if err := skipObjectRest(dec, n); err != nil {
			return err
		}
	}
	return expectEnd(dec, n)
}

// readArray reads a JSON array of messages and returns how many it held, n0 and a stand-in
// first element (see decodeArray) included.
func readArray(dec *json.Decoder, add func(chat.Message, []byte, int) error, n0 int, standIn bool) (int, error) {
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		return 0, &InputError{Field: "messages", Msg: "want a JSON array of messages"}
	}
	if standIn {
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return n0, err
		}
	}
	n := n0
	for dec.More() {
		var v messageValue
		if err := dec.Decode(&v); err != nil {
			return n, &InputError{Index: n, Msg: "malformed JSON: " + err.Error()}
		}
		if v.err != nil {
			return n, &InputError{Index: n, Msg: v.err.Error()}
		}
		m, raw := v.m, v.raw
		v = messageValue{}
		if err := add(m, raw, 0); err != nil {
			return n, err
		}
		n++
	}
	if _, err := dec.Token(); err != nil {
		return n, &InputError{Index: n, Msg: "malformed JSON: " + err.Error()}
	}
	if n == 0 {
		return 0, &InputError{Msg: "the input holds no message (an empty array)"}
	}
	return n, nil
}

// messageValue decodes an element of a JSON array of messages with decodeLine straight from
// the decoder's buffer: json.Decoder hands an Unmarshaler the bytes of a value without copying
// them, where decoding into a json.RawMessage would copy a large message once more.
type messageValue struct {
	m   chat.Message
	raw []byte // the stored JSON
	err error  // decodeLine's, kept apart from the decoder's syntax errors
}

func (v *messageValue) UnmarshalJSON(b []byte) error {
	v.m, v.raw, v.err = decodeLine(b, false) // the buffer is the decoder's: not in place
	return nil
}

// skipObjectRest reads what follows the "messages" array of an {"messages": [...]} object up to
// its closing brace: other keys are ignored, but must hold well-formed JSON. n is the number of
// messages read, for the error.
func skipObjectRest(dec *json.Decoder, n int) error {
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return &InputError{Index: n, Msg: "malformed JSON after the messages: " + err.Error()}
		}
		if key == "messages" {
			return &InputError{Index: n, Field: "messages", Msg: "the object has a second \"messages\" key"}
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return &InputError{Index: n, Msg: fmt.Sprintf("malformed JSON after the messages, at key %q: %v", key, err)}
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return &InputError{Index: n, Msg: "malformed JSON: the object {\"messages\": [...]} is not closed"}
	}
	return nil
}

// expectEnd rejects anything but white space after the input's JSON value. n is the number of
// messages read, for the error.
func expectEnd(dec *json.Decoder, n int) error {
	tok, err := dec.Token()
	if err == io.EOF {
		return nil
	}
	what := fmt.Sprintf("%v", tok)
	if err != nil {
		what = err.Error()
	}
	return &InputError{Index: n, Msg: "malformed JSON: data after the end of the messages: " + what}
}

func readJSONL(br *bufio.Reader, add func(chat.Message, []byte, int) error) error {
	line, n := 0, 0
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			line++
			if t := bytes.Trim(b, jsonSpace); len(t) > 0 {
				m, raw, derr := decodeLine(t, true) // the line is a copy of the input's, read by no one else
				if derr != nil {
					return &InputError{Line: line, Index: n, Msg: derr.Error()}
				}
				if err := add(m, raw, line); err != nil {
					return err
				}
				n++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if n == 0 {
		return &InputError{Msg: "the input holds no message"}
	}
	return nil
}

// jsonSpace is JSON's white space: a JSONL line may be padded with it, and with nothing else.
const jsonSpace = " \t\r\n"

// decodeMessage parses one message, rejecting invalid UTF-8 (which encoding/json would
// silently replace) and values that are not objects.
func decodeMessage(b []byte) (chat.Message, error) {
	if !utf8.Valid(b) {
		return chat.Message{}, errors.New("invalid UTF-8")
	}
	b = bytes.Trim(b, jsonSpace)
	if len(b) == 0 || b[0] != '{' {
		if json.Valid(b) {
			return chat.Message{}, errors.New("not a message: want a JSON object")
		}
		return chat.Message{}, errors.New("malformed JSON")
	}
	var m chat.Message
	if err := json.Unmarshal(b, &m); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return chat.Message{}, fmt.Errorf("malformed JSON: %v", err)
		}
		return chat.Message{}, err
	}
	return m, nil
}
