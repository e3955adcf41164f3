package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/serve/dialect"
)

// Summarizer is the upstream rung's completer in the Messages API's shape: POST /messages,
// not streamed, with the system prompt top-level and the request's other messages as user and
// assistant messages (a run of one role joined into one message, as the API wants them
// alternating, the first the user's), max_tokens the request's bound (else
// dialect.DefaultSummaryTokens), and the headers of the thread's latest turn (x-api-key or
// Authorization, anthropic-version and anthropic-beta). The answer's text is its text blocks
// joined; its prompt tokens are input_tokens with the cache's read and written tokens.
func (Dialect) Summarizer(u dialect.SummaryUpstream) llm.Completer {
	if u.Header.Get("Anthropic-Version") == "" {
		u.Header = u.Header.Clone()
		if u.Header == nil {
			u.Header = map[string][]string{}
		}
		u.Header.Set("Anthropic-Version", DefaultVersion)
	}
	return summarizer{u}
}

type summarizer struct{ u dialect.SummaryUpstream }

// summaryRequest is the body of a summarization request.
type summaryRequest struct {
	Model     string           `json:"model"`
	MaxTokens int              `json:"max_tokens"`
	System    string           `json:"system,omitempty"`
	Messages  []summaryMessage `json:"messages"`
}

type summaryMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// summaryRequestOf is req in the Messages API's shape.
func summaryRequestOf(model string, req llm.Request) summaryRequest {
	out := summaryRequest{Model: model, MaxTokens: req.MaxTokens}
	if out.MaxTokens <= 0 {
		out.MaxTokens = dialect.DefaultSummaryTokens
	}
	var system []string
	for _, m := range req.Messages {
		role := m.Role
		switch role {
		case chat.RoleSystem, "developer":
			system = append(system, m.Content)
			continue
		case chat.RoleAssistant:
		default:
			role = chat.RoleUser
		}
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content += "\n\n" + m.Content
			continue
		}
		if len(out.Messages) == 0 && role != chat.RoleUser {
			out.Messages = append(out.Messages, summaryMessage{Role: chat.RoleUser, Content: "(the conversation follows)"})
		}
		out.Messages = append(out.Messages, summaryMessage{Role: role, Content: m.Content})
	}
	out.System = strings.Join(system, "\n\n")
	if len(out.Messages) == 0 {
		out.Messages, out.System = []summaryMessage{{Role: chat.RoleUser, Content: out.System}}, ""
	}
	return out
}

// summaryReply is what is read of the answer.
type summaryReply struct {
	Model   string `json:"model"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// Complete sends req and reads the answer.
func (s summarizer) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	sr := summaryRequestOf(s.u.Model, req)
	body, err := json.Marshal(sr)
	if err != nil {
		return llm.Response{}, err
	}
	b, err := dialect.PostSummary(ctx, s.u, "/messages", body, sr.MaxTokens)
	if err != nil {
		return llm.Response{}, err
	}
	var r summaryReply
	if err := json.Unmarshal(b, &r); err != nil {
		return llm.Response{}, fmt.Errorf("%w: the upstream's answer is not a message: %v", llm.ErrBadResponse, err)
	}
	var text strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	finish := r.StopReason
	switch finish {
	case "max_tokens":
		finish = "length" // truncated: the cascade retries it
	case "end_turn", "stop_sequence":
		finish = "stop"
	}
	u := r.Usage
	return llm.Response{Text: text.String(), FinishReason: finish, Model: r.Model,
		PromptTokens: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens, CompletionTokens: u.OutputTokens,
		HTTPStatus: 200}, nil
}
