package memory

import (
	"fmt"
)

// Thread ids. ValidThreadID is the one rule for which strings name a thread, applied by every
// entry point that takes one: Append, memctl's arguments, serve's inspection
// API. The proxy creates threads from the paths of URLs and takes a narrower set of them
// (serve.ValidURLThreadID); each of those passes ValidThreadID too.

// maxThreadIDBytes is the longest thread id, in bytes.
const maxThreadIDBytes = 1024

// ValidThreadID checks that id can name a thread: 1 to maxThreadIDBytes bytes of UTF-8
// without a NUL character (which PostgreSQL's text cannot hold).
func ValidThreadID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("empty thread id")
	case len(id) > maxThreadIDBytes:
		return fmt.Errorf("thread id of %d bytes is too long: at most %d", len(id), maxThreadIDBytes)
	}
	if msg := badIdentifier(id); msg != "" {
		return fmt.Errorf("thread id %q %s", id, msg)
	}
	return nil
}
