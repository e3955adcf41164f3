package serve

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// TestFloorTokens: the messages counted as what every compaction keeps are the newest unit's
// (from the last place a kept part may start: not a tool result, no call before it answered
// after it), tool results aside, the newest user message whole only under on_failure keep,
// held when it is before the newest unit.
func TestFloorTokens(t *testing.T) {
	call := func(ids ...string) chat.Message {
		m := chat.TextMessage(chat.RoleAssistant, "a")
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: id, Type: "function", Function: chat.FunctionCall{Name: "f", Arguments: "{}"}})
		}
		return m
	}
	result := func(id string) chat.Message { m := chat.TextMessage(chat.RoleTool, "r"); m.ToolCallID = id; return m }
	sys, user, asst := chat.TextMessage(chat.RoleSystem, "s"), chat.TextMessage(chat.RoleUser, "u"), chat.TextMessage(chat.RoleAssistant, "a")
	for _, c := range []struct {
		name      string
		msgs      []chat.Message
		unit      int
		keep, cut int // keepUser, and not
	}{
		{"plain", []chat.Message{sys, user, asst, user}, 3, 1 << 3, 0},
		{"reply last", []chat.Message{sys, user, asst}, 2, 1<<1 | 1<<2, 1 << 2},
		{"calls answered", []chat.Message{sys, user, call("x", "y"), result("x"), result("y")}, 2, 1<<1 | 1<<2, 1 << 2},
		{"call then more", []chat.Message{sys, user, call("x"), result("x"), asst}, 4, 1<<1 | 1<<4, 1 << 4},
		{"answered before the last", []chat.Message{sys, user, call("x"), asst, result("x"), asst}, 5, 1<<1 | 1<<5, 1 << 5},
		{"answered after", []chat.Message{sys, user, call("x"), asst, result("x")}, 2, 1<<1 | 1<<2 | 1<<3, 1<<2 | 1<<3},
		{"results of calls not sent", []chat.Message{result("z"), user}, 1, 1 << 1, 0},
		{"only results", []chat.Message{result("z"), result("w")}, 0, 0, 0},
	} {
		from := leadingSystem(c.msgs)
		if u := newestUnit(c.msgs, from); u != c.unit {
			t.Errorf("%s: newest unit at %d, want %d", c.name, u, c.unit)
		}
		es := make([]memory.Entry, len(c.msgs))
		for i, m := range c.msgs {
			es[i].Message = m
		}
		if cuts := memory.Cuts(es, from); len(cuts) > 0 && cuts[len(cuts)-1] != c.unit || len(cuts) == 0 && c.unit != from && from > 0 {
			t.Errorf("%s: memory.Cuts %v: its last is not %d", c.name, cuts, c.unit)
		}
		for i := range c.msgs {
			c.msgs[i].Name = strconv.Itoa(i) // each message counts 1 << its index
		}
		for keep, want := range map[bool]int{true: c.keep, false: c.cut} {
			got := floorTokens(c.msgs, from, keep, func(m chat.Message) int {
				i, _ := strconv.Atoi(m.Name)
				return 1 << i
			})
			if got != want {
				t.Errorf("%s, keep %v: counted %b, want %b", c.name, keep, got, want)
			}
		}
	}
}

// TestWordsFloorTokens: the words of a JSON string are never more than the tokens of its text
// under the built-in encodings, whatever the text (prose, code, escapes, runs of one letter,
// digits, punctuation, other scripts).
func TestWordsFloorTokens(t *testing.T) {
	texts := []string{
		"the build fails on port 8080 again; see the log",
		"a b c d e f g h i j k l m n o p",
		"x\ny\tz  \u0020 w",
		"func main() {\n\tfmt.Println(\"hi\")\n}\n",
		"1 2 3 4 5 6 7 8 9 10 100 1000 10000",
		". , ; : ! ? ( ) [ ] { } - -- --- ...",
		"数据 库 的 表 很 大 ; ü ö ä ß",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
	}
	for _, enc := range tokencount.Encodings() {
		c, err := tokencount.NewCounter(enc)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range texts {
			raw, _ := json.Marshal(text)
			m := chat.Message{Role: chat.RoleUser, Content: raw}
			if w, n := words(raw), c.CountText(m.Text()); w > n || w == 0 {
				t.Errorf("%s: %q: %d words, %d tokens", enc, text, w, n)
			}
		}
	}
}
