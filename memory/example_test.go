package memory_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
)

// The quick start: keep a conversation in a store, read back what to send to the model.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "memcascade")
	defer os.RemoveAll(dir)

	store, err := memory.Open(ctx, filepath.Join(dir, "agent.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	_, err = store.Append(ctx, "support-42", []chat.Message{
		chat.TextMessage(chat.RoleSystem, "You are a helpful support agent."),
		chat.TextMessage(chat.RoleUser, "My order W1234 has not arrived."),
	}, memory.AppendOptions{Model: "gpt-4o"})
	if err != nil {
		log.Fatal(err)
	}

	active, err := store.Active(ctx, "support-42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(active.Messages()), "messages,", active.Tokens, "tokens")
	// Output: 2 messages, 27 tokens
}
