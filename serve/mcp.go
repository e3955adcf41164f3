package serve

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memcascade/memcascade/mcpserver"
)

// mcpHandler serves the memory tools of package mcpserver over MCP's streamable HTTP at /mcp,
// behind the same token and Host checks as every route (guard). /mcp?thread=T serves thread
// T only; /mcp serves every thread (each tool takes one). Cross-site requests are refused:
// a browser's request from another origin is answered 403.
func (s *Server) mcpHandler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		thread := r.URL.Query().Get("thread")
		if thread != "" && ValidURLThreadID(thread) != nil {
			return nil // 400
		}
		return mcpserver.New(mcpserver.Options{Compactor: s.Compactor, Thread: thread})
	}, &mcp.StreamableHTTPOptions{Logger: s.Logger})
	return http.NewCrossOriginProtection().Handler(h)
}
