package facts

import (
	"cmp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/memcascade/memcascade/transcript"
)

// Message is the minimal view of a chat message facts needs (FromTranscript converts the
// summarizers' transcript messages).
type Message struct {
	Role       string
	Content    string // text content ("" for null)
	Name       string
	ToolCalls  []ToolCall // assistant tool calls
	ToolCallID string
}

// ToolCall is one tool call of an assistant message. Arguments is the JSON string as sent; ID
// is the call's id, which the tool's result names ("" when unknown).
type ToolCall struct{ Name, Arguments, ID string }

// Kind is the kind of a fact.
type Kind string

// The kinds of facts, most important tier first.
const (
	KindConstraint Kind = "constraint" // a user's sentence with must, never, only, at least, ...
	KindError      Kind = "error"      // an error line: ValueError: ..., Error: ..., exit status 2
	KindToolCall   Kind = "tool_call"  // name(key=value, ...) of an assistant tool call
	KindID         Kind = "id"         // ZFA04Y, mia_li_3668, HAT136, a UUID, a git SHA, #1867
	KindDigest     Kind = "digest"     // sha256:9f86d0..., sha512-..., h1:..., an md5 or sha256 hex string
	KindVersion    Kind = "version"    // v1.26.8, 2.31.0, 1.4.0-rc.2, v0.0.0-20240515143000-a94a8fe5ccb1
	KindAmount     Kind = "amount"     // $1,286, 1,286 USD, EUR 30, "price": 1859
	KindPercent    Kind = "percent"    // 15%, 2.5 percent
	KindDate       Kind = "date"       // 2024-05-15, May 15, 2024, 15/05/2024
	KindPath       Kind = "path"       // /src/app/main.go, src/marshmallow/fields.py, C:\x\y.txt
	KindURL        Kind = "url"        // https://..., file:///...
	KindEmail      Kind = "email"      // a@b.com
	KindTime       Kind = "time"       // 15:00, 3pm
	KindQuantity   Kind = "quantity"   // 12 kg, 3.5 GB, 200 ms, 2 bags, 45 minutes
)

// Kinds lists every kind, most important tier first.
func Kinds() []Kind {
	return []Kind{KindConstraint, KindError, KindToolCall, KindID, KindDigest, KindVersion, KindAmount, KindPercent,
		KindDate, KindPath, KindURL, KindEmail, KindTime, KindQuantity}
}

// Fact is one entry of the ledger.
type Fact struct {
	Kind Kind `json:"kind"`
	// Text is the exact string to look for in a summary ("/src/marshmallow/fields.py",
	// "ZFA04Y", "$1,286", "2024-05-17"). For a tool call it is
	// "name(key=value, ...)"; see [Kept] for what must be kept of it.
	Text string `json:"text"`
	// Weight is the importance: higher first.
	Weight int `json:"weight"`
	// Seq is the index of the message where the fact was first seen (Extract); in a thread's
	// stored ledger, the seq of that message.
	Seq int `json:"seq"`
	// Entity is the object the fact was seen in (in a thread's ledger: the tool call whose
	// arguments or result hold it); "" when it was seen in free text.
	Entity string `json:"entity,omitempty"`
	// Outcome is, for a tool call, what its result said: "ok", or the error the tool returned
	// ("" while no result was seen). A tool call with its outcome is the record of an action.
	Outcome string `json:"outcome,omitempty"`
	// Dropped marks a fact of a stored ledger that a compaction named in its facts_dropped: no
	// longer needed in the context, since its report says it left.
	Dropped bool `json:"dropped,omitempty"`
	// Key is the key the value was first given under, as the message gave it: the key of a
	// JSON document ("reservation_id", "dob", "price") whose value is the fact alone (a
	// date-time gives its date); "" when it was only seen in free text or under a key that
	// says nothing (text, content, value, ...).
	Key string `json:"-"`
	// Of is, for a fact with a Key, the record it belongs to: "key value" of the field that
	// names the JSON object that held it (its first id field, "flight_number HAT080", else
	// its names, "passengers Omar Davis"); "" when none, or when the fact is that field.
	// Neither Key nor Of is stored with a thread's ledger.
	Of string `json:"-"`
}

// Base weights of the kinds. Bonuses (at most 7) never lift a fact into the tier above.
const (
	weightConstraint = 90
	weightError      = 70
	weightWrite      = 60 // tool calls that change something: kept before lookups and ids
	weightKey        = 50 // ids and lookups (tool calls that only read)
	weightValue      = 30 // amounts, percentages, dates, paths, URLs, emails
	weightDetail     = 10 // times and quantities

	bonusReferenced = 3 // said by the user or the assistant, or passed to a tool
	maxRepeatBonus  = 4 // one per further message that mentions the fact
)

func baseWeight(k Kind) int {
	switch k {
	case KindConstraint:
		return weightConstraint
	case KindError:
		return weightError
	case KindToolCall, KindID, KindDigest, KindVersion:
		return weightKey
	case KindTime, KindQuantity:
		return weightDetail
	}
	return weightValue
}

// kindRanks is the place of each kind in Kinds, for sorting.
var kindRanks = func() map[Kind]int {
	m := map[Kind]int{}
	for i, k := range Kinds() {
		m[k] = i
	}
	return m
}()

func kindRank(k Kind) int {
	switch k { // the order of Kinds, without a map lookup: sortFacts calls it per comparison
	case KindConstraint:
		return 0
	case KindError:
		return 1
	case KindToolCall:
		return 2
	case KindID:
		return 3
	case KindDigest:
		return 4
	case KindVersion:
		return 5
	case KindAmount:
		return 6
	case KindPercent:
		return 7
	case KindDate:
		return 8
	case KindPath:
		return 9
	case KindURL:
		return 10
	case KindEmail:
		return 11
	case KindTime:
		return 12
	case KindQuantity:
		return 13
	}
	return len(kindRanks)
}

// parallelMin is the number of messages from which Extract spreads the work over the CPUs: a
// run of messages is at least this long.
const parallelMin = 512

// runsPerCPU is how many runs of messages Extract makes for each CPU, at most: more runs than
// CPUs keep every CPU busy to the end when some other work (a summarizer's request) takes one
// of them for a while.
const runsPerCPU = 4

// Extract returns the ledger of the messages, deduplicated, most important first (stable
// order). See the package documentation for what is extracted. A long conversation is read by
// several goroutines, each a run of messages; their collectors merge exactly into the ledger
// one pass would give (see collector.merge).
func Extract(msgs []Message) []Fact {
	return ExtractFunc(len(msgs), func(i int) Message { return msgs[i] })
}

// ExtractFunc is Extract of the n messages message(0), ..., message(n-1): a caller whose
// messages are of another type hands each over as it is read, not all of them in a slice of
// their own. message is called once for each i, from several goroutines at once for a long
// conversation.
func ExtractFunc(n int, message func(i int) Message) []Fact {
	cpus := runtime.GOMAXPROCS(0)
	runs := min(runsPerCPU*cpus, n/parallelMin)
	if cpus == 1 || runs <= 1 {
		c := newCollector(n)
		collect(c, message, 0, n)
		return c.ledger()
	}
	parts := make([]*collector, runs)
	var wg sync.WaitGroup
	for r := range runs {
		lo, hi := r*n/runs, (r+1)*n/runs
		wg.Go(func() {
			parts[r] = newCollector(hi - lo)
			parts[r].run, parts[r].called = true, map[string]bool{}
			collect(parts[r], message, lo, hi)
		})
	}
	wg.Wait()
	// The runs merge into a collector sized for all their facts: its map never grows.
	size := 0
	for _, p := range parts {
		size += len(p.byKey)
	}
	all := &collector{byKey: make(map[factKey]*entry, size)}
	for _, p := range parts {
		all.merge(p)
	}
	return all.ledger()
}

// collect extracts the facts of messages lo to hi-1 of the conversation.
func collect(c *collector, message func(i int) Message, lo, hi int) {
	x := &extractor{c: c}
	defer func() { c.pending = x.calls }()
	for i := lo; i < hi; i++ {
		m := message(i)
		role := strings.ToLower(strings.TrimSpace(m.Role))
		if role == "system" || role == "developer" {
			continue
		}
		c.seq = i
		content := strings.ToValidUTF8(m.Content, "\uFFFD")
		switch role {
		case "user":
			x.message(content, ctxUser)
		case "assistant":
			x.message(content, ctxAssistant)
			for _, tc := range m.ToolCalls {
				x.toolCall(tc)
			}
		default: // tool, function, and any other role: output to read
			x.lastError = ""
			x.message(content, ctxTool)
			x.outcome(m.ToolCallID, content)
		}
	}
}

// sortFacts orders facts by weight (higher first), then by first sighting, kind and text.
//
// A long ledger is sorted by index, ties broken by position (the order a stable sort keeps),
// and then permuted: a fact is moved once instead of at every step of a stable merge.
func sortFacts(fs []Fact) {
	if len(fs) < 64 {
		slices.SortStableFunc(fs, func(a, b Fact) int { return compareFacts(&a, &b) })
		return
	}
	idx := make([]int32, len(fs))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := compareFacts(&fs[a], &fs[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	permute(fs, idx)
}

func compareFacts(a, b *Fact) int {
	if a.Weight != b.Weight {
		return cmp.Compare(b.Weight, a.Weight)
	}
	if a.Seq != b.Seq {
		return cmp.Compare(a.Seq, b.Seq)
	}
	return cmp.Or(cmp.Compare(kindRank(a.Kind), kindRank(b.Kind)), strings.Compare(a.Text, b.Text))
}

// collector deduplicates facts and counts where they were seen.
type collector struct {
	byKey map[factKey]*entry
	seq   int
	slab  []entry // where new entries are taken from, a block at a time
	// order holds the entries in the order they were first seen: by first sighting.
	order []*entry
	// key and of are the Key and Of of the facts added now (see extractor.walk).
	key, of string
	// run: the collector reads one run of a conversation that others read the rest of. Then
	// pending are its tool calls whose result it did not read (by call id), orphans the results
	// it read of calls it did not (before any call of that id of its own), and called the ids
	// of its calls: the merge pairs them (see merge).
	run     bool
	pending map[string]*entry
	orphans []orphan
	called  map[string]bool
	// norm is where the normal form of a fact's text is made to look its entry up (normalKey).
	norm []byte
}

type entry struct {
	fact    Fact
	base    int
	lastSeq int
	msgs    int
	ref     bool
	// outcomeSeq is the message whose result set fact.Outcome: a call made twice has the
	// outcome of the result read last.
	outcomeSeq int
	key        factKey // its key in byKey
}

// orphan is the outcome a result gave a call its collector did not see: the result's call id,
// its outcome, and the message it is.
type orphan struct {
	id, outcome string
	seq         int
}

// setOutcome gives e the outcome of the result in message seq, unless a later result set it.
func (e *entry) setOutcome(outcome string, seq int) {
	if e.fact.Outcome == "" || seq >= e.outcomeSeq {
		e.fact.Outcome, e.outcomeSeq = outcome, seq
	}
}

// factKey is a fact's identity: its kind and its key.
type factKey struct {
	kind Kind
	key  string
}

// entrySlab is how many entries a collector allocates at once: a long conversation has
// thousands of facts, made with one allocation a block instead of one each.
const entrySlab = 64

// newCollector returns a collector for a run of msgs messages, its map sized for two facts a
// message up to maxPresized: a long conversation's map is not grown (rehashed) a dozen times as
// it fills, and a very long one's, grown a few times past it, holds room for the facts it
// has, not for twice its messages (the runs of 100,000 short messages, about one fact in two
// messages, held 22 MB of empty room at once).
func newCollector(msgs int) *collector {
	return &collector{byKey: make(map[factKey]*entry, min(factsPerMessage*msgs, maxPresized))}
}

// factsPerMessage is how many facts a collector's map holds room for, a message.
const factsPerMessage = 2

// maxPresized is the most facts a collector's map holds room for from the start.
const maxPresized = 4096

// add records a fact of kind k with the given text, deduplicated by key (the normalised
// text when key is ""). ref marks a mention by the user, the assistant or a tool call.
func (c *collector) add(k Kind, text, key string, ref bool) {
	c.addBase(k, text, key, ref, baseWeight(k))
}

// addBase is add with a base weight other than the kind's.
func (c *collector) addBase(k Kind, text, key string, ref bool, base int) *entry {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	var e *entry
	if key == "" {
		key, e = c.normalKey(k, text)
	} else {
		e = c.byKey[factKey{k, key}]
	}
	if e == nil {
		fk := factKey{k, key}
		if len(c.slab) == 0 {
			c.slab = make([]entry, entrySlab)
		}
		e, c.slab = &c.slab[0], c.slab[1:]
		*e = entry{fact: Fact{Kind: k, Text: text, Seq: c.seq, Key: c.key, Of: c.of}, base: base, lastSeq: c.seq, msgs: 1, key: fk}
		c.byKey[fk] = e
		c.order = append(c.order, e)
	} else if e.lastSeq != c.seq {
		e.lastSeq = c.seq
		e.msgs++
	}
	if e.fact.Key == "" && c.key != "" { // the first key it was given under
		e.fact.Key, e.fact.Of = c.key, c.of
	}
	e.ref = e.ref || ref
	e.base = max(e.base, base)
	return e
}

// normalKey returns normalize(text) and the entry of kind k under it, nil when there is
// none. The normal form of an ASCII text is made in c.norm and looked up there: it becomes a
// string of its own only for a fact seen first (a fact seen again allocates nothing).
func (c *collector) normalKey(k Kind, text string) (string, *entry) {
	b, ascii := appendNormalASCII(c.norm[:0], text)
	if !ascii {
		key := normalizeRunes(text)
		return key, c.byKey[factKey{k, key}]
	}
	c.norm = b
	// The map does not keep the key of a lookup: a string over c.norm is enough for it.
	if e := c.byKey[factKey{k, unsafe.String(unsafe.SliceData(b), len(b))}]; e != nil {
		return e.key.key, e
	}
	if string(b) == text {
		return text, nil // text is its own normal form
	}
	return string(b), nil
}

// merge adds the entries of d, which saw only messages after every message c saw: the first
// sighting stays c's, the messages that mention a fact add up, and a call's outcome is that of
// its result read last. The results d read of calls c saw (d's orphans) give those calls
// their outcome; a call of d takes the place of a call of c with the same id still waiting (a
// client may reuse ids), as one pass does; d's calls still waiting for a result wait in c.
func (c *collector) merge(d *collector) {
	for _, o := range d.orphans {
		if e := c.pending[o.id]; e != nil {
			delete(c.pending, o.id)
			e.setOutcome(o.outcome, o.seq)
		}
	}
	for id := range d.called {
		delete(c.pending, id)
	}
	for _, de := range d.order { // d saw its facts after c's: the new ones follow in order
		e := c.byKey[de.key]
		if e == nil {
			c.byKey[de.key] = de
			c.order = append(c.order, de)
			continue
		}
		e.msgs += de.msgs
		e.lastSeq = de.lastSeq
		if de.fact.Outcome != "" {
			e.setOutcome(de.fact.Outcome, de.outcomeSeq)
		}
		e.ref = e.ref || de.ref
		e.base = max(e.base, de.base)
		if e.fact.Key == "" {
			e.fact.Key, e.fact.Of = de.fact.Key, de.fact.Of
		}
	}
	for id, de := range d.pending {
		if c.pending == nil {
			c.pending = map[string]*entry{}
		}
		c.pending[id] = c.byKey[de.key] // de itself, or the entry it was merged into
	}
}

func (c *collector) ledger() []Fact {
	weights := make([]int, len(c.order))
	for i, e := range c.order {
		weights[i] = e.base + min(e.msgs-1, maxRepeatBonus)
		if e.ref {
			weights[i] += bonusReferenced
		}
	}
	// The entries are in order of first sighting (Seq ascending): a stable sort by weight alone
	// keeps that order among the facts of one weight, and only the facts of one weight first
	// seen in one message remain to be ordered by kind and text, a few at a time. The result is
	// sortFacts' order.
	idx := make([]int32, len(c.order))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(weights[b], weights[a]) })
	out := make([]Fact, len(c.order))
	for i, k := range idx {
		out[i] = c.order[k].fact
		out[i].Weight = weights[k]
	}
	for lo := 0; lo < len(out); {
		hi := lo + 1
		for hi < len(out) && out[hi].Weight == out[lo].Weight && out[hi].Seq == out[lo].Seq {
			hi++
		}
		if hi-lo > 1 {
			slices.SortStableFunc(out[lo:hi], func(a, b Fact) int { return compareFacts(&a, &b) })
		}
		lo = hi
	}
	return out
}

// permute puts in fs, in order, the facts of fs at idx (a permutation of its indexes, which it
// uses up: each is set to -1). It moves the facts in place, a cycle of the permutation at a
// time, rather than through a copy of fs: a long ledger's copy is megabytes.
func permute(fs []Fact, idx []int32) {
	for i := range idx {
		if idx[i] < 0 {
			continue
		}
		first := fs[i]
		j := i
		for {
			k := int(idx[j])
			idx[j] = -1
			if k == i {
				fs[j] = first
				break
			}
			fs[j] = fs[k]
			j = k
		}
	}
}

// FromTranscript is the message of the ledger for a message of a transcript: a previous summary
// (role summary) counts like the assistant's messages, and tool calls keep their name and
// arguments. It is the one conversion from the transcript the summarizers read.
func FromTranscript(m transcript.Message) Message {
	fm := Message{Role: m.Role, Content: m.Text, Name: m.Name, ToolCallID: m.ToolCallID}
	if m.Role == transcript.RoleSummary {
		fm.Role = "assistant"
	}
	for _, tc := range m.ToolCalls {
		fm.ToolCalls = append(fm.ToolCalls, ToolCall{Name: tc.Name, Arguments: tc.Arguments, ID: tc.ID})
	}
	return fm
}
