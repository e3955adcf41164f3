package serve

import (
	"github.com/memcascade/memcascade/serve/anthropic"
	"github.com/memcascade/memcascade/serve/chatcompletions"
	"github.com/memcascade/memcascade/serve/dialect"
	"github.com/memcascade/memcascade/serve/responses"
)

// dialects are the API shapes the proxy speaks, one line each: each dialect's routes are
// served under /t/{thread}/v1 and /v1 (see dialect.Dialect).
var dialects = []dialect.Dialect{
	chatcompletions.Dialect{},
	anthropic.Dialect{},
	responses.Dialect{},
}
