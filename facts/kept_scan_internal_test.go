package facts

import (
	"maps"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// dateSetWhole is dateSet as it was before it matched line by line: every pattern over the
// whole summary.
func dateSetWhole(raw string) map[string]bool {
	dates := map[string]bool{}
	add := func(key string) {
		if key == "" || strings.HasPrefix(key, "ambiguous:") {
			return
		}
		dates[key] = true
		dates["--"+key[len(key)-5:]] = true
	}
	for _, g := range isoDateRE.FindAllStringSubmatch(raw, -1) {
		add(g[1] + "-" + g[2] + "-" + g[3])
	}
	for _, re := range []*regexp.Regexp{dayMonthRE, monthDayRE, slashYMDRE, slashDMYRE} {
		for _, t := range re.FindAllString(raw, -1) {
			add(dateKey(t))
		}
	}
	return dates
}

// TestDateSetByLine: the summary's dates, matched line by line and only by the patterns whose
// separators a line holds, are those the patterns find over the whole text, on the recorded
// conversations' text and on dates of every form at line ends, split over lines, between
// tabs and in words.
func TestDateSetByLine(t *testing.T) {
	texts := []string{
		"", "\n", "2024-05-22", "on 2024-05-22\nand May 3, 2024\n", "May\n3 2024", "3\nMay 2024",
		"12/05/2024\n2024/5/12\r\n05.12.2024.", "a2024-05-22b 2024-05-22T10:30:00Z\n2024-05-\n22",
		"Sept 3rd, 2024\tand 4th\tOctober 2024\nDec.\t25", "June 31 1999 July 4 2099 Mar 1st",
		"v1.2.2024 1/2/2024/3 2024/13/45 31/12/2024 12/31/2024 3/4/2024",
		"Jan\nFeb 30\n\n\nNov 11,\n2024 Nov 12, 2025", "Ünïcode May 5, 2024 — 2024‐05‐05 5 May 2024",
	}
	for _, name := range conversationFiles {
		hay := haystack(loadConversation(t, name))
		texts = append(texts, hay, strings.ReplaceAll(hay, "\n", " "), strings.ReplaceAll(hay, " ", "\n"))
	}
	found := 0
	for i, text := range texts {
		want := dateSetWhole(text)
		found += len(want)
		got := newSummaryIndex(text).dateSet()
		if !maps.Equal(got, want) {
			t.Errorf("text %d (%.60q...): line by line %d dates, whole %d:\n%v\n%v", i, text, len(got), len(want), got, want)
		}
	}
	if found == 0 {
		t.Fatal("no text held a date")
	}
}

// BenchmarkDateSet: the dates of a summary the length of a recorded conversation's text, by
// line (dateSet) and over the whole text (what it did before).
func BenchmarkDateSet(b *testing.B) {
	hay := haystack(loadConversation(b, conversationFiles[0]))
	b.Run("by line", func(b *testing.B) {
		for b.Loop() {
			newSummaryIndex(hay).dateSet()
		}
	})
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			dateSetWhole(hay)
		}
	})
}

// TestNumberRuns: numberRuns gives the spans numberRunRE finds, on the recorded
// conversations' text and on numbers at the ends, with points before, after and between.
func TestNumberRuns(t *testing.T) {
	texts := []string{"", "1", "a", "1.", ".1", "1.2", "1.2.3", "12..3", "x12.34y5", "1.a 2. 3.4.", "٣ 3", "v1.2.3-rc.4 $1,234.56 10:30"}
	for _, name := range conversationFiles {
		texts = append(texts, normalize(haystack(loadConversation(t, name))))
	}
	runs := 0
	for i, text := range texts {
		var got [][]int
		for st, e := range numberRuns(text) {
			got = append(got, []int{st, e})
		}
		want := numberRunRE.FindAllStringIndex(text, -1)
		runs += len(want)
		if len(got) != len(want) {
			t.Fatalf("text %d (%.60q...): %d runs, numberRunRE %d", i, text, len(got), len(want))
		}
		for k := range want {
			if got[k][0] != want[k][0] || got[k][1] != want[k][1] {
				t.Fatalf("text %d: run %d at %v, numberRunRE at %v", i, k, got[k], want[k])
			}
		}
	}
	if runs == 0 {
		t.Fatal("no text held a number")
	}
}

// TestTokenInIsContainsToken: the lookup of a fact by the places of its words answers what a
// scan of the whole text answers, on random texts and needles (cut from the text or not).
func TestTokenInIsContainsToken(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	pieces := []string{"w0001", "hat12", "a", "ab", "_", "é", "éa", "1", "12", " ", " ", "#", "-", ".", "(", ")", "=", "$", "main street", "get_order(id=#w0001)", "ü1", "x"}
	pick := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	checked, held := 0, 0
	for range 3000 {
		idx := newSummaryIndex(pick(1 + rng.IntN(40)))
		for range 20 {
			needle := normalize(pick(1 + rng.IntN(4)))
			if rng.IntN(2) == 0 && len(idx.norm) > 0 {
				i := rng.IntN(len(idx.norm))
				j := i + 1 + rng.IntN(min(12, len(idx.norm)-i))
				needle = strings.TrimSpace(strings.ToValidUTF8(idx.norm[i:j], ""))
			}
			if needle == "" {
				continue
			}
			want := containsToken(idx.norm, needle)
			if got := idx.tokenIn(needle); got != want {
				t.Fatalf("tokenIn(%q) in %q = %v, containsToken %v", needle, idx.norm, got, want)
			}
			checked++
			if want {
				held++
			}
		}
	}
	if held == 0 || held == checked {
		t.Fatalf("%d of %d needles held: the test does not tell the answers apart", held, checked)
	}
}
