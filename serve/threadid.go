package serve

import (
	"fmt"
	"regexp"

	"github.com/memcascade/memcascade/memory"
)

// urlThreadID is what a thread id the proxy takes from a URL may be: a letter or digit, then
// letters, digits, '.', '_', ':' or '-', 128 characters at most.
var urlThreadID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// ValidURLThreadID checks a thread id taken from a URL (memctl serve's /t/THREAD/v1 and
// X-Memctl-Thread, /mcp?thread=): memory.ValidThreadID's rule, narrowed to urlThreadID.
func ValidURLThreadID(id string) error {
	if !urlThreadID.MatchString(id) {
		return fmt.Errorf("thread id %q is not valid: want 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit", id)
	}
	return memory.ValidThreadID(id)
}
