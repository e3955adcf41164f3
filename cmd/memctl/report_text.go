package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/english"
	"github.com/memcascade/memcascade/memory"
)

// usageText describes a compaction's usage: "3 requests, 5230 prompt + 410 completion
// tokens", with ", $0.0105" when some attempts were priced and "(estimated: ...)" when some
// tokens were counted locally.
func usageText(u memory.Usage) string {
	s := fmt.Sprintf("%s, %d prompt + %d completion tokens", english.Count(u.Requests, "request", "requests"), u.PromptTokens, u.CompletionTokens)
	if u.Cost != nil {
		s += ", " + costText(u.Cost)
	}
	if u.Estimated {
		s += " (estimated: a server sent no usage, counted locally)"
	}
	return s
}

func (a *app) printReport(r memory.Report) error {
	if a.json {
		return a.printJSON(r)
	}
	writeReport(a.out, r)
	return nil
}

func writeReport(w io.Writer, r memory.Report) {
	id := "-"
	if r.ID != 0 {
		id = strconv.FormatInt(r.ID, 10)
	}
	fmt.Fprintf(w, "compaction %s on thread %s: ", id, r.Thread)
	paint(w, statusStyle(r.Status), string(r.Status))
	fmt.Fprintf(w, " (%s)\n", r.Reason)
	if r.Detail != "" {
		fmt.Fprintf(w, "  %s\n", r.Detail)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	fmt.Fprintf(w, "  tokens    %d -> %d (limit %d)%s\n", r.TokensBefore, r.TokensAfter, r.TokenLimit,
		appendedText(r.TokensAppended, r.MessagesAppended, r.TokensAfter))
	fmt.Fprintf(w, "  messages  %d -> %d: %s", r.MessagesBefore, r.MessagesAfter, summarizedText(r))
	if r.FromSeq > 0 && r.SummarizedMessages > 0 {
		fmt.Fprintf(w, " (#%d-#%d)", r.FromSeq, r.ToSeq)
	}
	fmt.Fprintf(w, ", %d kept\n", r.KeptMessages)
	if r.Provider != "" {
		fmt.Fprintf(w, "  summary   %d tokens by %s (%s), %s, %s, %d ms\n", r.SummaryTokens, r.Provider, r.Model,
			english.Count(r.Passes, "pass", "passes"), english.Count(r.Chunks, "chunk", "chunks"), r.DurationMs)
	}
	if r.Requests > 0 {
		fmt.Fprintf(w, "  requests  %s to providers\n", english.Count(r.Requests, "request", "requests"))
	}
	if u := r.Usage; u.Requests > 0 {
		fmt.Fprintf(w, "  usage     %s\n", usageText(u))
	}
	if r.FactsTotal > 0 {
		why := "no room within the limit"
		if r.Strategy == compact.StrategyMask || r.Strategy == compact.StrategyWindow {
			fmt.Fprintf(w, "  facts     %d in what was masked, cut or left out, %d still in the view; ", r.FactsTotal, r.FactsKept)
			why = "not in the active context"
		} else {
			fmt.Fprintf(w, "  facts     %d in what was summarized, %d in the provider's summary; ", r.FactsTotal, r.FactsKept)
		}
		if len(r.FactsDropped) == 0 {
			fmt.Fprintln(w, "every one is in the active context")
		} else {
			fmt.Fprintf(w, "%d left out (%s): %s\n", len(r.FactsDropped), why, strings.Join(r.FactsDropped, "; "))
		}
	}
	if r.Superseded {
		fmt.Fprintln(w, "  superseded by a later compaction of the thread")
	}
	if len(r.Attempts) > 0 {
		fmt.Fprintln(w, "  attempts:")
		priced := slices.ContainsFunc(r.Attempts, func(at memory.AttemptView) bool { return at.Cost != nil })
		head := "    PROVIDER\tMODEL\tOUTCOME\tHTTP\tCLASS\tMS\tERROR"
		if priced {
			head = "    PROVIDER\tMODEL\tOUTCOME\tHTTP\tCLASS\tMS\tCOST\tERROR"
		}
		tw := newTable(w, head)
		for _, at := range r.Attempts {
			cells := []string{"    " + at.Provider, at.Model, at.Outcome, fmt.Sprint(at.HTTPStatus), at.ErrorClass, fmt.Sprint(at.DurationMs)}
			if priced {
				cells = append(cells, costText(at.Cost))
			}
			tw.row(append(cells, oneLine(at.Error))...)
		}
		tw.flush()
	}
	if r.Summary != nil && *r.Summary != "" {
		fmt.Fprintln(w, "  summary:")
		for line := range strings.SplitSeq(*r.Summary, "\n") {
			fmt.Fprintln(w, "    "+line)
		}
	}
}

// appendedText says what was appended while a compaction ran, after its tokens line: "; then
// 2 messages (57 tokens) appended while it ran: 1540 now". "" when none was.
func appendedText(tokens, messages, after int) string {
	if tokens == 0 && messages == 0 {
		return ""
	}
	return fmt.Sprintf("; then %s (%d tokens) appended while it ran: %d now",
		english.Count(messages, "message", "messages"), tokens, after+tokens)
}

// summarizedText says how many messages a compaction summarized: "24 summarized", or, for one
// that applied nothing, "none summarized".
func summarizedText(r memory.Report) string {
	if r.SummarizedMessages == 0 {
		return "none summarized"
	}
	return fmt.Sprintf("%d summarized", r.SummarizedMessages)
}

// costText is a cost in dollars: "$0.0105", "-" for none (not priced).
func costText(c *float64) string {
	if c == nil {
		return "-"
	}
	return "$" + strconv.FormatFloat(*c, 'f', -1, 64)
}
