package facts

import (
	"encoding/json"
	"iter"
	"strings"
	"unicode/utf8"
)

// ctx says where a text comes from, which decides what is looked for in it.
type ctx struct {
	ref         bool // said by the user or the assistant, or passed to a tool
	constraints bool // user messages only
	prose       bool // times and percentages are read only where they are not data dumps
	allErrors   bool // tool output: unanchored error phrases too (exit status, HTTP 404, ...)
	acted       bool // versions are read only where the agent acts on them: user text, tool arguments
}

var (
	ctxUser      = ctx{ref: true, constraints: true, prose: true, acted: true}
	ctxAssistant = ctx{ref: true, prose: true}
	ctxArgs      = ctx{ref: true, prose: true, acted: true}
	ctxTool      = ctx{allErrors: true}
)

type extractor struct {
	c *collector
	// calls are the tool_call entries by call id, waiting for their result's outcome.
	calls map[string]*entry
	// lastError is the last error line found in the message being read.
	lastError string
	// mask is the masker of the text spans reads, reset for each.
	mask masker
}

// addError records an error line.
func (x *extractor) addError(line string, ref bool) {
	line = cutWords(line, maxErrorLen)
	x.c.add(KindError, line, "", ref)
	if x.lastError == "" {
		x.lastError = line
	}
}

// outcome records what the result content of call id said: its first error line, else ok.
func (x *extractor) outcome(id, content string) {
	outcome := "ok"
	if x.lastError != "" {
		outcome = x.lastError
	}
	e := x.calls[id]
	if e == nil {
		if x.c.run && id != "" && !x.c.called[id] { // its call may be in a run read before this one
			x.c.orphans = append(x.c.orphans, orphan{id: id, outcome: outcome, seq: x.c.seq})
		}
		return
	}
	delete(x.calls, id)
	e.setOutcome(outcome, x.c.seq)
}

// lookupVerbs start the names of tools that only read.
var lookupVerbs = []string{"get", "search", "list", "find", "lookup", "read", "fetch", "query", "show", "view",
	"check", "calculate", "think", "count", "describe", "grep", "ls", "cat", "open"}

// IsLookup reports whether a tool only reads, by its name: get_user_details, search_flights,
// list_files, read_file. Its calls are kept after the calls that change something; package
// extractive reads a task as done once a call of another tool succeeded.
func IsLookup(name string) bool {
	n := strings.ToLower(name)
	for _, v := range lookupVerbs {
		if rest, ok := strings.CutPrefix(n, v); ok && (rest == "" || rest[0] == '_' || rest[0] == '-' || rest[0] == '.') {
			return true
		}
	}
	return false
}

// message extracts from a message content: a JSON document is walked (keys are not
// facts, values are), anything else is read as text.
func (x *extractor) message(content string, cx ctx) {
	if strings.TrimSpace(content) == "" {
		return
	}
	if v, ok := parseJSONDoc(content); ok {
		x.walk(v, "", "", "", cx)
		return
	}
	x.text(content, cx)
}

// toolCall records name(key=value, ...) and extracts from the argument values.
func (x *extractor) toolCall(tc ToolCall) {
	name := strings.Join(strings.Fields(strings.ToValidUTF8(tc.Name, "\uFFFD")), " ")
	args := strings.ToValidUTF8(tc.Arguments, "\uFFFD")
	v, ok := parseJSONDoc(args)
	if name != "" {
		text, required := toolCallText(name, v, ok, args)
		base := weightWrite
		switch {
		case required == 0:
			base = weightValue // think(thought=…), submit(): only the name to keep
		case IsLookup(name):
			base = weightKey
		}
		if e := x.c.addBase(KindToolCall, text, "", true, base); e != nil && tc.ID != "" {
			if x.calls == nil {
				x.calls = map[string]*entry{}
			}
			x.calls[tc.ID] = e
			if x.c.run {
				x.c.called[tc.ID] = true
			}
		}
	}
	if ok {
		x.walk(v, "", "", "", ctxArgs)
	} else if strings.TrimSpace(args) != "" {
		x.text(args, ctxArgs)
	}
}

// Tool call facts show scalar arguments up to this many characters; longer values are cut
// and marked with an ellipsis, and do not have to be kept.
const (
	maxArgValue     = 40
	maxToolCallText = 200
	ellipsis        = "…"
)

// toolCallText renders name(key=value, ...) from the parsed arguments, and counts the values
// a summary has to keep.
func toolCallText(name string, v any, parsed bool, raw string) (string, int) {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('(')
	required := 0
	obj, isObj := v.(jsonObject)
	switch {
	case parsed && isObj:
		n := 0
		for _, kv := range obj {
			if !isArgKey(kv.key) {
				continue
			}
			var val string
			switch t := kv.val.(type) {
			case string:
				val = oneLine(t)
				if val == "" {
					continue
				}
				if utf8.RuneCountInString(val) > maxArgValue || val != strings.TrimSpace(t) {
					val = cutRunes(val, maxArgValue) + ellipsis
				} else if val != "true" && val != "false" && val != "null" {
					required++
				}
			case json.Number:
				val = t.String()
				required++
			case bool:
				val = "false"
				if t {
					val = "true"
				}
			case nil:
				val = "null"
			default:
				continue // arrays and objects: their ids and dates are facts of their own
			}
			if b.Len() > maxToolCallText {
				b.WriteString(", " + ellipsis)
				break
			}
			if n > 0 {
				b.WriteString(", ")
			}
			b.WriteString(kv.key)
			b.WriteByte('=')
			b.WriteString(val)
			n++
		}
	case strings.TrimSpace(raw) != "" && !(parsed && isEmptyJSON(v)):
		b.WriteString(ellipsis)
	}
	b.WriteByte(')')
	return b.String(), required
}

func isEmptyJSON(v any) bool {
	switch t := v.(type) {
	case jsonObject:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

// isArgKey accepts argument names that parse back out of name(key=value, ...).
func isArgKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case (c >= '0' && c <= '9' || c == '.' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// oneLine returns the first non-empty line of s, trimmed.
func oneLine(s string) string {
	for line := range lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// lines yields the lines of s, split at \n, \r\n and lone \r, leaving out the empty ones (the
// lines strings.FieldsFunc gives), without making a slice of them: most texts are one line.
func lines(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		start := 0
		for i := 0; i < len(s); i++ {
			if s[i] != '\n' && s[i] != '\r' {
				continue
			}
			if i > start && !yield(s[start:i]) {
				return
			}
			start = i + 1
		}
		if start < len(s) {
			yield(s[start:])
		}
	}
}

// cutRunes returns s cut to at most n runes.
func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return strings.TrimSpace(s[:j])
		}
		i++
	}
	return s
}

// cutWords returns s cut to at most n runes, at a space when one is not too far back.
func cutWords(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	c := cutRunes(s, n)
	if sp := strings.LastIndexByte(c, ' '); sp > len(c)/2 {
		c = c[:sp]
	}
	return strings.TrimSpace(c)
}

// walk extracts from a parsed JSON value: string values are read as text, and some keys
// mark their values as ids, amounts or errors. A value that is one word is recorded with its
// key and the record it belongs to (of: see recordHead), as Fact.Key and Fact.Of say.
func (x *extractor) walk(v any, key, parent, of string, cx ctx) {
	switch t := v.(type) {
	case jsonObject:
		head, at := recordHead(t, key)
		for i, kv := range t {
			o := head
			if i == at {
				o = "" // the field that names the record
			}
			x.walk(kv.val, kv.key, key, o, cx)
		}
	case []any:
		for _, e := range t {
			x.walk(e, key, parent, of, cx)
		}
	case string:
		x.label(key, of, t)
		x.keyed(key, parent, t, false, cx)
		x.text(t, cx)
		x.c.key, x.c.of = "", ""
	case json.Number:
		x.label(key, of, t.String())
		x.keyed(key, parent, t.String(), true, cx)
		x.c.key, x.c.of = "", ""
	}
}

// label makes key and of the Key and Of of the facts of val, a value of a JSON document,
// when val is one word and key says what it is.
func (x *extractor) label(key, of, val string) {
	v := strings.TrimSpace(val)
	if v == "" || len(v) > maxLabelled || strings.ContainsAny(v, " \t\r\n") || !isLabelKey(key) {
		return
	}
	x.c.key, x.c.of = key, of
}

// maxLabelled is the longest value recorded with its key.
const maxLabelled = 120

// plainKeys are keys that say nothing of their value: a value under them is not labelled.
var plainKeys = map[string]bool{"text": true, "content": true, "value": true, "data": true, "message": true,
	"output": true, "result": true, "results": true, "stdout": true, "stderr": true, "body": true, "input": true,
	"arguments": true, "args": true, "items": true, "item": true, "type": true}

// isLabelKey reports whether a JSON key says what its value is: a short key of word runes
// that is not one of plainKeys.
func isLabelKey(key string) bool {
	if key == "" || len(key) > 40 || plainKeys[strings.ToLower(key)] {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ' ') {
			return false
		}
	}
	return true
}

// recordHead names the record a JSON object (under key) is: "key value" of its first field
// with an id key and a one-word value, and that field's index; else its names (name, or
// first_name and last_name, also in an object under "name"), after key when there is one
// ("passengers Omar Davis"), and -1; "", -1 when it has neither.
func recordHead(obj jsonObject, key string) (string, int) {
	for i, kv := range obj {
		if v, ok := scalarText(kv.val); ok && isIDKey(kv.key, strings.ToLower(kv.key)) && isLabelKey(kv.key) &&
			v != "" && len(v) <= 64 && !strings.ContainsAny(v, " \t\r\n") {
			return kv.key + " " + v, i
		}
	}
	names := namesOf(obj)
	if len(names) == 0 {
		return "", -1
	}
	head := strings.Join(names, " ")
	if isLabelKey(key) {
		head = key + " " + head
	}
	return head, -1
}

// namesOf are the values of an object's name fields: name, first_name and last_name, the
// fields of an object under name.
func namesOf(obj jsonObject) []string {
	var names []string
	for _, kv := range obj {
		switch lower := strings.ToLower(kv.key); {
		case lower == "name" || lower == "first_name" || lower == "last_name":
			if inner, ok := kv.val.(jsonObject); ok && lower == "name" {
				names = append(names, namesOf(inner)...)
			} else if v, ok := kv.val.(string); ok && strings.TrimSpace(v) != "" && len(v) <= 40 && !strings.ContainsAny(v, "\r\n") {
				names = append(names, strings.TrimSpace(v))
			}
		}
		if len(names) >= 2 {
			return names[:2]
		}
	}
	return names
}

// scalarText is a string or number value of a JSON document as text.
func scalarText(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return strings.TrimSpace(t), true
	case json.Number:
		return t.String(), true
	}
	return "", false
}

// keyed applies the rules that depend on a JSON key.
func (x *extractor) keyed(key, parent, val string, number bool, cx ctx) {
	if key == "" {
		return
	}
	k := strings.ToLower(key)
	v := strings.TrimSpace(val)
	switch {
	case isMoneyKey(k):
		n := strings.TrimPrefix(v, "-")
		if n == "" || !isPlainNumber(n) || numberCore(n) == "0" {
			return
		}
		x.c.add(KindAmount, n, numberCore(n), cx.ref)
	case isIDKey(key, k):
		if v == "" || len(v) > 64 || strings.ContainsAny(v, " \t\r\n") || (number && strings.ContainsAny(v, ".eE")) {
			return
		}
		if !hasDigit(v) && !(len(v) >= 5 && isUpperAlnum(v)) {
			return
		}
		x.c.add(KindID, v, "", cx.ref)
	case !number && (isErrorKey(k) || isErrorKey(strings.ToLower(parent)) && isMessageKey(k)):
		if line := oneLine(v); line != "" {
			x.addError(line, cx.ref)
		}
	}
}

var moneyKeys = map[string]bool{
	"amount": true, "price": true, "total": true, "cost": true, "balance": true,
	"refund": true, "fee": true, "fees": true, "paid": true, "charge": true,
	"subtotal": true, "tax": true, "discount": true, "payment": true,
}

func isMoneyKey(k string) bool {
	if moneyKeys[k] {
		return true
	}
	for _, s := range []string{"_amount", "_price", "_total", "_cost", "_balance", "_fee", "_refund", "_paid", "_charge"} {
		if strings.HasSuffix(k, s) {
			return true
		}
	}
	return false
}

var idKeys = map[string]bool{
	"id": true, "uuid": true, "sku": true, "confirmation": true, "confirmation_code": true,
	"confirmation_number": true, "booking_reference": true, "booking_code": true,
	"tracking_number": true, "ticket": true, "ticket_number": true, "reference": true,
	"order_number": true, "flight_number": true, "invoice_number": true, "account_number": true,
	"case_number": true, "reservation": true, "pnr": true,
}

// isIDKey: id, *_id, camelCase *Id, and the keys above.
func isIDKey(key, lower string) bool {
	if idKeys[lower] || strings.HasSuffix(lower, "_id") || strings.HasSuffix(lower, "-id") {
		return true
	}
	n := len(key)
	return n > 2 && (key[n-2:] == "Id" || key[n-2:] == "ID") && key[n-3] >= 'a' && key[n-3] <= 'z'
}

func isErrorKey(k string) bool {
	switch k {
	case "error", "errors", "error_message", "errormessage", "err", "exception", "fault", "stderr_error":
		return true
	}
	return false
}

func isMessageKey(k string) bool {
	switch k {
	case "message", "detail", "details", "description", "reason", "msg":
		return true
	}
	return false
}

func isPlainNumber(s string) bool {
	digits, dots := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		case c == ',' && i > 0:
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

func isUpperAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// text extracts from free text: constraints (user), error lines, and the spans.
func (x *extractor) text(s string, cx ctx) {
	if strings.TrimSpace(s) == "" {
		return
	}
	if cx.constraints {
		x.constraints(s)
	}
	x.errors(s, cx)
	x.spans(s, cx)
}
