package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/memcascade/memcascade/chat"
)

// chatRequest is a chat completions request: every field as given (forwarded unchanged but
// messages, in the order given), and the fields the proxy reads.
type chatRequest struct {
	fields   map[string]json.RawMessage
	order    []string // the keys of fields as the request gives them
	messages []chat.Message
	sent     *sentMessages // the messages as sent and as decoded
	// prev is the thread's previous request given to parseChatRequest, of which the first
	// same messages are this one's, byte for byte.
	prev   *sentMessages
	same   int
	tools  []chat.Tool
	model  string
	stream bool
}

// badRequest is a malformed request: its message and the parameter at fault.
type badRequest struct{ param, msg string }

func (e *badRequest) Error() string { return e.msg }

// sentMessages are the messages of a request as sent (the hash of each one's bytes) and as
// decoded (msgs), and its tools likewise; none is changed once made.
type sentMessages struct {
	hashes    []bytesHash
	msgs      []chat.Message
	toolsHash bytesHash
	tools     []chat.Tool // nil: none sent
}

// bytesHash identifies a message by its bytes: 128 bits of two seeded hashes (maphash), the
// seeds random per process, so that no request can be made to collide with another.
type bytesHash [2]uint64

var hashSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func hashBytes(b []byte) bytesHash {
	return bytesHash{maphash.Bytes(hashSeeds[0], b), maphash.Bytes(hashSeeds[1], b)}
}

// parseChatRequest parses a request's body in one pass over it (see scanRequest). prev, when
// not nil, is the thread's previous request: a message sent at the same place with the same
// bytes (an agent resending its history), and tools sent with the same bytes, are taken as
// they were decoded then, not decoded again.
func parseChatRequest(body []byte, prev *sentMessages) (chatRequest, error) {
	var req chatRequest
	if !utf8.Valid(body) {
		return req, &badRequest{"", "the request body is not valid UTF-8"}
	}
	members, raws, err := scanRequest(body)
	if err != nil {
		return req, &badRequest{"", "the request body is not a JSON object: want {\"model\": ..., \"messages\": [...]}: " + err.Error()}
	}
	req.fields = make(map[string]json.RawMessage, len(members))
	req.order = make([]string, len(members))
	for i, m := range members {
		req.fields[m.key] = m.val
		req.order[i] = m.key
	}
	if raw, ok := req.fields["model"]; !ok || json.Unmarshal(raw, &req.model) != nil || req.model == "" {
		return req, &badRequest{"model", "model: want the model's name, a non-empty string"}
	}
	if len(raws) == 0 {
		return req, &badRequest{"messages", "messages: want a non-empty array of chat messages"}
	}
	req.messages = make([]chat.Message, len(raws))
	req.prev = prev
	hashes := make([]bytesHash, len(raws))
	for i, raw := range raws {
		hashes[i] = hashBytes(raw)
		if prev != nil && i < len(prev.hashes) && hashes[i] == prev.hashes[i] {
			req.messages[i] = prev.msgs[i]
			if req.same == i {
				req.same++
			}
			continue
		}
		if raw[0] != '{' {
			return req, &badRequest{fmt.Sprintf("messages[%d]", i), fmt.Sprintf("messages[%d]: want a message object", i)}
		}
		if err := json.Unmarshal(raw, &req.messages[i]); err != nil {
			return req, &badRequest{fmt.Sprintf("messages[%d]", i), fmt.Sprintf("messages[%d]: %v", i, err)}
		}
	}
	req.sent = &sentMessages{hashes: hashes, msgs: req.messages}
	if raw, ok := req.fields["stream"]; ok && !bytes.Equal(raw, []byte("null")) {
		if json.Unmarshal(raw, &req.stream) != nil {
			return req, &badRequest{"stream", "stream: want true or false"}
		}
	}
	if raw, ok := req.fields["tools"]; ok && !bytes.Equal(raw, []byte("null")) {
		h := hashBytes(raw)
		if prev != nil && prev.tools != nil && h == prev.toolsHash {
			req.tools = prev.tools
		} else if json.Unmarshal(raw, &req.tools) != nil {
			return req, &badRequest{"tools", "tools: want an array of tool definitions"}
		}
		if req.tools == nil {
			req.tools = []chat.Tool{}
		}
		req.sent.toolsHash, req.sent.tools = h, req.tools
	}
	return req, nil
}

func isJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
