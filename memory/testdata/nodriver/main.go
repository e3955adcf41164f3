// Command nodriver opens a postgres:// URL through memory.Open in a program that does not link
// the PostgreSQL backend, and prints the error (TestOpenPostgresWithoutDriver).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/memcascade/memcascade/memory"
)

func main() {
	_, err := memory.Open(context.Background(), "postgres://u:secret@127.0.0.1:1/x")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("opened")
}
