// Package dialect is the seam between memctl serve's core and the API shapes it speaks: a
// Dialect reads an agent's request into a Turn (the conversation as chat.Messages, and what
// passes through untouched), writes the upstream's request from the active context, reads the
// upstream's reply (JSON or a stream) into messages and usage, and writes errors in its own
// shape. serve's core (thread state, reconcile, fit and compact, compact-and-retry, storing the
// reply, limits, recall, the page) sees only Turns and chat.Messages.
//
// Each dialect is a folder of its own beside this one (serve/chatcompletions, ...), registered
// in one line of serve (serve/dialects.go).
package dialect

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"sync/atomic"
	"unsafe"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// Dialect is one API shape.
type Dialect interface {
	// Name names the dialect in logs and errors ("chat_completions").
	Name() string
	// Routes are the paths it answers POST on, relative to a base URL's /v1 ("/chat/completions");
	// serve mounts each under /t/{thread}/v1 and /v1.
	Routes() []string
	// Thread returns the thread a request names without a /t/THREAD path: a session header of
	// the agent's own ("" for none). X-Memctl-Thread is read by serve for every dialect.
	Thread(r *http.Request) string
	// Parse reads a request's body. prev, when not nil, is the thread's previous request:
	// messages sent again with the same bytes may be taken from it rather than decoded again.
	// A malformed request is a *BadRequest.
	Parse(body []byte, prev *Sent) (Turn, error)
	// Upstream is the path of the upstream's route for a turn (appended to the upstream's base
	// URL), and sets the headers of the upstream request up: its content negotiation and its
	// auth, from the agent's request r (forwarded) or key (the configured upstream key, "" for
	// none).
	Upstream(t Turn, up, r *http.Request, key string) string
	// Render writes the upstream request's body: the turn as the agent sent it, with the active
	// context (its entries' messages, in order) as its conversation. enc holds, for each active
	// message, its stored JSON (the chat completions encoding), which a dialect of that shape
	// writes as it is.
	Render(t Turn, active []memory.Entry, enc []json.RawMessage) ([]byte, error)
	// Reply reads a JSON reply of the upstream: the messages to store and the usage it reports.
	Reply(body []byte) ([]chat.Message, Usage, error)
	// Stream returns the assembler of a streamed reply.
	Stream() Stream
	// TooLong reports whether an upstream's error answer refuses the prompt as too long for
	// the model's window.
	TooLong(status int, body []byte) bool
	// WriteError writes an error answer in the dialect's shape: status, the domain's code of the
	// error, detail (the dialect's code field, "" for none), the message and the parameter at
	// fault ("" for none).
	WriteError(w http.ResponseWriter, status int, code memory.Code, detail, msg, param string)
	// StreamError is the event that ends a stream that broke off, in the dialect's shape, as
	// written to the client (with its trailing blank line).
	StreamError(detail, msg string) []byte
	// Local lists the routes of the dialect that serve answers itself, without a turn of the
	// upstream (Anthropic's count_tokens, Responses' compact), mounted as Routes are.
	Local() []Local
	// LocalAnswer writes the JSON answer of a local route of kind: for CountTokens the prompt's
	// size, tokens; for Compact the summary the cascade wrote of the turn's conversation.
	LocalAnswer(kind LocalKind, t Turn, tokens int, summary string) ([]byte, error)
	// Summarizer returns the completer of the upstream rung of serve's summarizer (the model
	// serve fronts summarizes first when the config names no cascade): it sends one
	// summarization request, not streamed, in the dialect's shape to the upstream u names, and
	// reads the text and usage of its answer. An error answer is a *cascade.ProviderError of
	// the cascade's classes (see cascade.HTTPError), so that retries and cooldowns work, and no
	// error text holds the key.
	Summarizer(u SummaryUpstream) llm.Completer
}

// Local is a route serve answers itself (see Dialect.Local).
type Local struct {
	Route string // relative to /v1, as Routes
	Kind  LocalKind
}

// LocalKind is what serve does for a local route: the request is parsed by the dialect as a
// turn (Parse), then
type LocalKind int

// The kinds of local routes.
const (
	// CountTokens counts the prompt the turn would send upstream: the thread's active context
	// with the turn's new messages, and its tools (the request's own messages when they do not
	// follow the thread's history). Nothing is stored.
	CountTokens LocalKind = iota + 1
	// Compact summarizes the turn's conversation through the compactor's cascade: the messages
	// are stored in the thread (as a turn's are), the thread is compacted (forced), and the
	// summary answers.
	Compact
)

// Turn is a request read by its dialect.
type Turn struct {
	Model  string
	Stream bool
	// Messages is the conversation as the agent sent it: its instructions first (a system
	// prompt given beside the messages is a leading system message here).
	Messages []chat.Message
	// Params name, for each of Messages, where the request gave it, in the request's own terms
	// ("messages[3]", "input[5]", "system"): errors name a message by it. nil: messages[i].
	Params []string
	// Tools are the tool definitions, counted in the prompt's size.
	Tools []chat.Tool
	// Fields are the request's members as sent, Order their keys as the request gives them:
	// a dialect's Render writes them back, its conversation replaced.
	Fields map[string]json.RawMessage
	Order  []string
	// Sent is this request's messages as sent (see Sent); Prev the previous request it was
	// parsed against, and Same how many of its first messages are Prev's, byte for byte (or,
	// in a dialect that says so, the same messages however written); of those, Taken are
	// Prev's own, the same values taken from it.
	Sent  *Sent
	Prev  *Sent
	Same  int
	Taken int
	// Notice, when not nil, is a note of serve's for the model (its role system or user, its
	// text), set by serve before Render: Render writes it after the conversation, where the
	// dialect's API takes it (a last message, or a text block at the end of the last user
	// message). It is never stored, and the agent never sends it back.
	Notice *chat.Message
	// AsSent, set by serve before Render, says that the active context Render is given is
	// this request's messages, one for one and in order: nothing of it compacted, masked,
	// superseded or left out, nothing added. Render then writes the request's own bytes
	// (SentBody) when it can.
	AsSent bool
}

// SentBody is the request's body as the agent sent it, the upstream's request of a turn that
// forwards the request unchanged: nil unless t is AsSent, has no Notice, and its members
// (Fields, Order) are those the request's scan read, each once and as sent (a key sent twice,
// or a member the proxy changed or added, is written by Render). The slice is the request's
// own: it is read, never changed.
func (t Turn) SentBody() []byte {
	if !t.AsSent || t.Notice != nil || t.Sent == nil || t.Sent.Scan == nil {
		return nil
	}
	sc := t.Sent.Scan
	if sc.Body == nil || sc.dup || len(sc.Members) != len(t.Order) || len(t.Fields) != len(t.Order) {
		return nil
	}
	for i, m := range sc.Members {
		if v, ok := t.Fields[m.Key]; !ok || t.Order[i] != m.Key || !sameSlice(v, m.Val) {
			return nil
		}
	}
	return sc.Body
}

// sameSlice reports whether a and b are the same bytes in memory (not only equal ones).
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Param is where the request gave its message i (see Turn.Params).
func (t Turn) Param(i int) string {
	if i >= 0 && i < len(t.Params) {
		return t.Params[i]
	}
	return fmt.Sprintf("messages[%d]", i)
}

// BadRequest is a malformed request: its message and the parameter at fault.
type BadRequest struct{ Param, Msg string }

func (e *BadRequest) Error() string { return e.Msg }

// Sent are the messages of a request as sent (the hash of each one's bytes) and as decoded
// (Msgs), and its tools likewise; none is changed once made.
type Sent struct {
	// Dialect is the Name of the dialect that read them: serve compares a request with the
	// previous one of its thread only in the same dialect.
	Dialect   string
	Hashes    []Hash
	Msgs      []chat.Message
	ToolsHash Hash
	Tools     []chat.Tool // nil: none sent
	// Scan is the request's body as scanned (ScanObjectAfter), for a dialect that scans the
	// next request from where it stops sharing this one's bytes; nil: none kept.
	Scan *Scanned
	// Elem is, for each of Msgs, the element of Scan.Elems it starts at (-1: a message of
	// another member, a system prompt), and Params where the request gave each (see
	// Turn.Params): a dialect whose elements are not its messages one for one takes from them
	// the messages of the elements a later request sends again with the same bytes. nil: none.
	Elem   []int
	Params []string
	// Own: Msgs stay the request's messages as parsed, whose originals (chat.Message.Extra)
	// are the request's bytes, which the dialect's Render writes; serve never puts the
	// history's equal messages in their place (their originals may be an earlier request's
	// bytes). A dialect that takes messages from the previous request for their bytes sets it,
	// and so does one whose next request extends Msgs in place (NewSent).
	Own bool

	// ext is what NewSent made Hashes and Msgs from: their arrays with room past them, which
	// the first request parsed against this one (or a copy of it) may take (nil: none).
	ext *extent
}

// extent is the arrays of a Sent's Hashes and Msgs, with their capacity: its first elements
// are the Sent's, those past them belong to the one request that takes it (taken), which
// writes its own messages there. A Sent's copies share it.
type extent struct {
	taken  atomic.Bool
	hashes []Hash
	msgs   []chat.Message
}

// NewSent returns the Sent of a request of n messages whose first shared are, hash and
// message, those of prev (nil: none): its Hashes and Msgs of length n, the first shared
// prev's, the others zero, for the caller to fill before another request sees the Sent.
// When those are all of prev's messages, n is more, and prev's arrays have room for the rest,
// the first request made so takes the room: its arrays are prev's, extended in place, and
// the first shared are not copied (an agent that resends its whole history each turn costs
// what it adds, not what it resends). Otherwise they are copied into new arrays with room for
// a quarter more. Hashes and Msgs are capped at n: an append to them elsewhere copies them,
// never writing in the room.
func NewSent(prev *Sent, shared, n int) *Sent {
	shared = max(min(shared, n, len(prev.HashesOrNil()), len(prev.MsgsOrNil())), 0)
	if prev != nil && prev.ext != nil && n > shared && shared == len(prev.Msgs) && shared == len(prev.Hashes) {
		e := prev.ext
		if n <= cap(e.msgs) && n <= cap(e.hashes) && sameStart(e.msgs, prev.Msgs) && sameStart(e.hashes, prev.Hashes) &&
			e.taken.CompareAndSwap(false, true) {
			next := &extent{hashes: e.hashes[:n], msgs: e.msgs[:n]}
			clear(next.hashes[shared:])
			clear(next.msgs[shared:])
			return &Sent{Hashes: next.hashes[:n:n], Msgs: next.msgs[:n:n], ext: next}
		}
	}
	size := n + n/4 + 16
	e := &extent{hashes: make([]Hash, n, size), msgs: make([]chat.Message, n, size)}
	copy(e.hashes, prev.HashesOrNil()[:shared])
	copy(e.msgs, prev.MsgsOrNil()[:shared])
	return &Sent{Hashes: e.hashes[:n:n], Msgs: e.msgs[:n:n], ext: e}
}

// sameStart reports whether a and b start at the same element in memory (never when b is
// empty).
func sameStart[T any](a, b []T) bool {
	return len(b) > 0 && cap(a) > 0 && &a[:1][0] == &b[0]
}

// Spare is the memory of the room past s's arrays (see NewSent), which the next request of
// its conversation may fill.
func (s *Sent) Spare() int64 {
	if s == nil || s.ext == nil {
		return 0
	}
	return int64(cap(s.ext.hashes)-len(s.Hashes))*int64(unsafe.Sizeof(Hash{})) +
		int64(cap(s.ext.msgs)-len(s.Msgs))*int64(unsafe.Sizeof(chat.Message{}))
}

// HashesOrNil is s.Hashes, nil for a nil s.
func (s *Sent) HashesOrNil() []Hash {
	if s == nil {
		return nil
	}
	return s.Hashes
}

// MsgsOrNil is s.Msgs, nil for a nil s.
func (s *Sent) MsgsOrNil() []chat.Message {
	if s == nil {
		return nil
	}
	return s.Msgs
}

// Hash identifies a message by its bytes: 128 bits of two seeded hashes (maphash), the seeds
// random per process, so that no request can be made to collide with another.
type Hash [2]uint64

var hashSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// HashBytes is the Hash of b. Each half hashes b as one string (maphash.Comparable), which the
// runtime's hash reads in one run, several times faster over a large body than maphash.Bytes,
// which hashes it 128 bytes at a time.
func HashBytes(b []byte) Hash {
	s := unsafe.String(unsafe.SliceData(b), len(b))
	return Hash{maphash.Comparable(hashSeeds[0], s), maphash.Comparable(hashSeeds[1], s)}
}

// Usage is what the upstream reports of a reply's prompt.
type Usage struct {
	// PromptTokens is the prompt's size as the upstream counts it, cached tokens included
	// (0: not reported).
	PromptTokens int
	// CachedTokens are the prompt tokens read from the upstream's prompt cache.
	CachedTokens int
	// CompletionTokens is the reply's size as the upstream counts it (0: not reported): with
	// PromptTokens, what serve's upstream price (price_per_mtok) is applied to.
	CompletionTokens int
}

// Stream assembles a streamed reply, one server-sent event at a time.
type Stream interface {
	// Event takes one event: its name (the event: line, "" for none) and its data (the data:
	// lines joined). It says what to do with the event: pass it on, or hold it back until the
	// reply is stored, as the event that ends the stream for the client (nothing after it is
	// read). An error is a stream that cannot be assembled.
	Event(name string, data []byte) (Action, error)
	// Done reports whether the stream reached its end (a finish, or the end event).
	Done() bool
	// Failed reports whether the upstream sent an error event of its own: it is passed on and
	// nothing is stored.
	Failed() bool
	// Messages are the assembled reply, Usage what the stream reported.
	Messages() []chat.Message
	Usage() Usage
}

// Holder is a Stream that says how many bytes the reply it assembles holds (the capacity of
// its buffers): the relay counts them against the server's bound on bytes in flight. A Stream
// that is not one is counted by the data of the events it took.
type Holder interface {
	Held() int
}

// Action is what the relay does with an event (see Stream.Event).
type Action int

// The actions.
const (
	Pass Action = iota // write the event to the client now
	End                // the last event: write it after the reply is stored, read no more
)

// ScanTurn begins a dialect's Parse of a request whose conversation is the array member
// arrayKey: it scans body (from where it stops sharing prev's, when prev was scanned: see
// ScanObjectAfter) and returns the turn with its Fields, Order and Model, the scan (the
// array's elements in sc.Elems), and how many of those elements are prev's. shape is the
// request's form the error names when body is not a JSON object (`{"model": ..., ...}`).
func ScanTurn(body []byte, arrayKey, shape string, prev *Sent) (t Turn, sc *Scanned, shared int, err error) {
	var prevScan *Scanned
	if prev != nil {
		prevScan = prev.Scan
	}
	sc, shared, err = ScanObjectAfter(body, arrayKey, prevScan)
	if err != nil {
		if errors.Is(err, ErrNotUTF8) {
			return t, nil, 0, &BadRequest{Msg: "the request body is not valid UTF-8"}
		}
		return t, nil, 0, &BadRequest{Msg: "the request body is not a JSON object: want " + shape + ": " + err.Error()}
	}
	t.Fields = make(map[string]json.RawMessage, len(sc.Members))
	t.Order = make([]string, len(sc.Members))
	for i, m := range sc.Members {
		t.Fields[m.Key] = m.Val
		t.Order[i] = m.Key
	}
	if raw, ok := t.Fields["model"]; !ok || json.Unmarshal(raw, &t.Model) != nil || t.Model == "" {
		return t, sc, shared, &BadRequest{Param: "model", Msg: "model: want the model's name, a non-empty string"}
	}
	return t, sc, shared, nil
}
