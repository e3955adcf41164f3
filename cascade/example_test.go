package cascade_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/transcript"
)

// A provider that fails hands over to the next one; its attempts are logged and it cools
// down.
func ExampleCascade_Complete() {
	dir, _ := os.MkdirTemp("", "cascade-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	sqldb, err := db.OpenHandle(ctx, filepath.Join(dir, "memctl.db"), db.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sqldb.Close()

	down := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, &openai.APIError{HTTPStatusCode: 503, HTTPStatus: "503 Service Unavailable", Message: "overloaded"}
	}}
	c := cascade.NewWith(sqldb, cascade.Options{
		Sleep: func(context.Context, time.Duration) error { return nil }, // no waiting in an example
		Observe: func(ev cascade.Event) {
			if ev.Kind == cascade.EventRetry || ev.Kind == cascade.EventFail {
				fmt.Printf("%s: %s %s\n", ev.Provider, ev.Kind, ev.Class)
			}
		},
	},
		cascade.Entry{Name: "local", Type: "fake", Model: "llama3.2", Provider: down, MaxAttempts: 2},
		cascade.Entry{Name: "offline", Type: "extractive", Model: "extractive", Provider: extractive.Summarizer{}},
	)

	// A model reads the rendered transcript in Messages; the offline summarizer reads Transcript.
	conv := []transcript.Message{{Seq: 1, Role: "user", Text: "Book flight HAT170."}, {Seq: 2, Role: "assistant", Text: "Booked HAT170."}}
	res, err := c.Complete(ctx, 0, llm.Request{MaxTokens: 100, Transcript: conv, Messages: []llm.Message{
		{Role: "user", Content: transcript.Render(conv, transcript.Options{})},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Provider)
	fmt.Println(res.Text)

	// The attempt log is read through the store on the same database.
	store, err := memory.New(ctx, sqldb, memory.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rows, _ := store.Attempts(ctx, "", 0)
	for i := len(rows) - 1; i >= 0; i-- {
		fmt.Println(rows[i].Provider, rows[i].Outcome, rows[i].HTTPStatus, rows[i].ErrorClass)
	}
	// Output:
	// local: retry server
	// local: fail server
	// offline
	// ## Goal and constraints
	// - Goal: Book flight HAT170.
	//
	// ## Decisions
	// - Booked HAT170.
	//
	// ## Open tasks and next step
	// - Last assistant step: Booked HAT170.
	// local error 503 server
	// local error 503 server
	// offline ok 0
}
