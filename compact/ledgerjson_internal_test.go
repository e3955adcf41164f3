package compact

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/facts"
)

// TestDecodeLedger: the hand encoder and decoder of stored ledgers give what encoding/json
// gives, on the JSON storedLedger writes for random ledgers (texts with quotes, escapes, control and
// non-ASCII characters, every optional field) and on JSON of other shapes.
func TestDecodeLedger(t *testing.T) {
	t.Parallel()
	texts := []string{"W000123", "", "a\"b", `back\slash`, "tab\there", "line\nbreak", "<html> & co", "café", "\u2028", "emoji 🎉",
		"bad \xff utf8", "ctrl \x01", "order(id=W1, flight=HAT2)"}
	rng := rand.New(rand.NewPCG(9, 10))
	pick := func() string { return texts[rng.IntN(len(texts))] + texts[rng.IntN(len(texts))] }
	fast := 0
	for range 3000 {
		fs := make([]facts.Fact, rng.IntN(6))
		for i := range fs {
			fs[i] = facts.Fact{Kind: facts.Kinds()[rng.IntN(12)], Text: pick(), Weight: rng.IntN(100) - 5, Seq: rng.IntN(1 << 20)}
			if rng.IntN(2) == 0 {
				fs[i].Entity = pick()
			}
			if rng.IntN(3) == 0 {
				fs[i].Outcome = pick()
			}
			fs[i].Dropped = rng.IntN(4) == 0
		}
		data, err := json.Marshal(fs)
		if err != nil {
			t.Fatal(err)
		}
		if mine := encodeLedger(fs); string(mine) != string(data) {
			t.Fatalf("encodeLedger:\n%s\njson.Marshal:\n%s", mine, data)
		}
		checkLedgerDecode(t, data)
		if _, ok := scanLedger(data); ok {
			fast++
		}
	}
	if fast < 100 {
		t.Errorf("only %d ledgers took the hand path", fast)
	}
	for _, fs := range [][]facts.Fact{nil, {}} {
		if mine := encodeLedger(fs); !json.Valid(mine) || string(mine) != map[bool]string{true: "null", false: "[]"}[fs == nil] {
			t.Errorf("encodeLedger(%#v) = %s", fs, mine)
		}
	}
	for _, data := range []string{"null", "[]", `[{"kind":"id","text":"A","weight":1,"seq":2}]`, ` [{"kind":"id","text":"A","weight":1,"seq":2}]`,
		`[{"Kind":"id","text":"A","weight":1,"seq":2}]`, `[{"kind":"id","text":"A","weight":1.5,"seq":2}]`, `[{"kind":"id","text":"A","weight":01,"seq":2}]`,
		`[{"kind":"id","text":"A","weight":-0,"seq":2}]`, `[{"kind":"id","text":"A","weight":1,"seq":2,"dropped":false}]`,
		`[{"kind":"id","text":"A","weight":1,"seq":2,"extra":1}]`, `[{"kind":"id","text":"A","weight":1,"seq":99999999999999999999}]`,
		`[{"kind":"id","text":"A","weight":1,"seq":2},]`, `[{"kind":"id","text":"A","weight":1,"seq":2}`, `[{"kind":"id","text":"A\u0042","weight":1,"seq":2}]`,
		`[{"kind":"id","text":"A","weight":1,"seq":2}{"kind":"id","text":"B","weight":1,"seq":2}]`, `[null]`, `{}`, ``, `[`} {
		checkLedgerDecode(t, []byte(data))
	}
}

func checkLedgerDecode(t *testing.T, data []byte) {
	t.Helper()
	var want []facts.Fact
	wantErr := json.Unmarshal(data, &want)
	got, err := decodeLedger(data)
	if (err != nil) != (wantErr != nil) || err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\ngot  %#v, %v\nwant %#v, %v", strings.ToValidUTF8(string(data), "?"), got, err, want, wantErr)
	}
}

// BenchmarkDecodeLedger reads back a stored ledger of 9,000 ids, by hand and by encoding/json.
func BenchmarkDecodeLedger(b *testing.B) {
	fs := make([]facts.Fact, 9000)
	for i := range fs {
		fs[i] = facts.Fact{Kind: facts.KindID, Text: "W" + strings.Repeat("0", 6-len(itoa(i))) + itoa(i), Weight: 53, Seq: i + 1}
	}
	data, _ := json.Marshal(fs)
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeLedger(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var out []facts.Fact
			if err := json.Unmarshal(data, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func itoa(i int) string { return strconv.Itoa(i) }
