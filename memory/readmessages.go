package memory

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/memcascade/memcascade/chat"
)

// ReadMessages reads messages in every form memctl reads them in: JSONL (one message a line),
// a JSON array of messages and {"messages": [...]}, read as Store.Import reads them, with the
// same errors (*InputError, naming the line or the message at fault) and the same check of
// each message's role (not the import's checks of a thread: tool calls answered, content
// given, which a request cut anywhere need not pass); and the
// chat request form, {"model": ..., "messages": [...], "tools": [...]} with its keys in any
// order, whose tool definitions it returns too (nil in the other forms). It reads r whole.
func ReadMessages(r io.Reader) ([]chat.Message, []chat.Tool, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	var tools []chat.Tool
	if req, ok := requestForm(data); ok {
		if len(req.Tools) > 0 && string(req.Tools) != "null" {
			if err := json.Unmarshal(req.Tools, &tools); err != nil {
				return nil, nil, &InputError{Field: "tools", Msg: "want an array of tool definitions: " + err.Error()}
			}
		}
		data = req.Messages
	}
	var msgs []chat.Message
	err = readMessages(bytes.NewReader(data), func(m chat.Message, _ []byte, line int) error {
		if field, msg := checkRole(m); msg != "" {
			return &InputError{Line: line, Index: len(msgs), Field: field, Msg: msg}
		}
		msgs = append(msgs, m)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return msgs, tools, nil
}

// request is the chat request form of ReadMessages.
type request struct {
	Role     json.RawMessage `json:"role"`
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"`
}

// requestForm reports whether data is one JSON object that is a chat request: it has
// "messages", no "role" (a JSONL message), and "tools" or another key before "messages"
// ({"messages": [...]} alone is read as Store.Import reads it).
func requestForm(data []byte) (request, bool) {
	t := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	var req request
	if !bytes.HasPrefix(t, []byte("{")) || json.Unmarshal(t, &req) != nil || req.Role != nil || req.Messages == nil {
		return request{}, false
	}
	return req, req.Tools != nil || !isMessagesObject(t)
}
