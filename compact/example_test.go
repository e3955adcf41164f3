package compact_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/memory"
)

// An agent loop: append each turn, and compact when ShouldCompact says so. The program opens
// the database and builds on it the store and the cascade, which keeps its cooldowns and
// attempt log there and reads the store's clock. The cascade here is the built-in offline
// summarizer; an agent would configure its OpenAI-compatible providers first (see package
// config, whose NewCompactor does this wiring).
func Example_agentLoop() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "memcascade")
	defer os.RemoveAll(dir)

	h, err := db.OpenHandle(ctx, filepath.Join(dir, "agent.db"), db.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	store, err := memory.New(ctx, h, memory.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	summarizer := cascade.NewWith(h, cascade.Options{Now: store.Now},
		cascade.Entry{Name: "offline", Type: "extractive", Provider: extractive.Summarizer{}})
	compactor := compact.NewWith(store, summarizer, compact.Settings{TokenLimit: 2000}, compact.Config{Pace: summarizer.TimeFor})

	store.Append(ctx, "t", []chat.Message{chat.TextMessage(chat.RoleSystem, "You are a travel agent.")}, memory.AppendOptions{})
	for turn := range 30 {
		question := fmt.Sprintf("Question %d: what about flight HAT%03d? %s", turn, turn, strings.Repeat("details ", 20))
		answer := fmt.Sprintf("Flight HAT%03d leaves at %02d:00. %s", turn, turn%24, strings.Repeat("more ", 20))
		if _, err := store.Append(ctx, "t", []chat.Message{
			chat.TextMessage(chat.RoleUser, question),
			chat.TextMessage(chat.RoleAssistant, answer), // the model's reply
		}, memory.AppendOptions{}); err != nil {
			log.Fatal(err)
		}
		due, err := compactor.ShouldCompact(ctx, "t")
		if err != nil {
			log.Fatal(err)
		}
		if due {
			rep, err := compactor.Compact(ctx, "t", compact.Options{})
			if err != nil {
				log.Fatal(err) // the originals are kept; the agent can go on
			}
			fmt.Printf("turn %d: %s, %d -> %d tokens\n", turn, rep.Status, rep.TokensBefore, rep.TokensAfter)
		}
	}
	active, _ := store.Active(ctx, "t")
	fmt.Println("under the limit:", active.Tokens <= 2000)
	// Output:
	// turn 22: applied, 1669 -> 806 tokens
	// under the limit: true
}
