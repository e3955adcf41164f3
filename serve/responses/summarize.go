package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/serve/dialect"
)

// Summarizer is the upstream rung's completer in the Responses API's shape: POST /responses,
// not streamed, store false, the request's system messages as instructions and its other
// messages as input message items, max_output_tokens its bound (when set), with the headers
// of the thread's latest turn (its Authorization). The answer's text is its output_text, else
// the output_text parts of its message items; one left incomplete for max_output_tokens is
// truncated (finish reason "length").
func (Dialect) Summarizer(u dialect.SummaryUpstream) llm.Completer { return summarizer{u} }

type summarizer struct{ u dialect.SummaryUpstream }

// summaryRequest is the body of a summarization request.
type summaryRequest struct {
	Model           string        `json:"model"`
	Instructions    string        `json:"instructions,omitempty"`
	Input           []summaryItem `json:"input"`
	MaxOutputTokens int           `json:"max_output_tokens,omitempty"`
	Store           bool          `json:"store"`
}

type summaryItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

// summaryRequestOf is req in the Responses API's shape.
func summaryRequestOf(model string, req llm.Request) summaryRequest {
	out := summaryRequest{Model: model, MaxOutputTokens: max(req.MaxTokens, 0)}
	var instructions []string
	for _, m := range req.Messages {
		switch m.Role {
		case chat.RoleSystem, "developer":
			instructions = append(instructions, m.Content)
		case chat.RoleAssistant:
			out.Input = append(out.Input, summaryItem{Type: "message", Role: chat.RoleAssistant, Content: m.Content})
		default:
			out.Input = append(out.Input, summaryItem{Type: "message", Role: chat.RoleUser, Content: m.Content})
		}
	}
	out.Instructions = strings.Join(instructions, "\n\n")
	if len(out.Input) == 0 {
		out.Input, out.Instructions = []summaryItem{{Type: "message", Role: chat.RoleUser, Content: out.Instructions}}, ""
	}
	return out
}

// summaryReply is what is read of the answer.
type summaryReply struct {
	Model      string  `json:"model"`
	Status     string  `json:"status"`
	OutputText *string `json:"output_text"`
	Output     []struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Incomplete *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// Complete sends req and reads the answer.
func (s summarizer) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	sr := summaryRequestOf(s.u.Model, req)
	body, err := json.Marshal(sr)
	if err != nil {
		return llm.Response{}, err
	}
	b, err := dialect.PostSummary(ctx, s.u, "/responses", body, sr.MaxOutputTokens)
	if err != nil {
		return llm.Response{}, err
	}
	var r summaryReply
	if err := json.Unmarshal(b, &r); err != nil {
		return llm.Response{}, fmt.Errorf("%w: the upstream's answer is not a response: %v", llm.ErrBadResponse, err)
	}
	var text strings.Builder
	if r.OutputText != nil {
		text.WriteString(*r.OutputText)
	} else {
		for _, o := range r.Output {
			if o.Type != "message" {
				continue
			}
			for _, c := range o.Content {
				if c.Type == "output_text" {
					text.WriteString(c.Text)
				}
			}
		}
	}
	finish := "stop"
	if r.Status == "incomplete" {
		finish = "incomplete"
		if r.Incomplete != nil && r.Incomplete.Reason == "max_output_tokens" {
			finish = "length" // truncated: the cascade retries it
		}
	}
	return llm.Response{Text: text.String(), FinishReason: finish, Model: r.Model,
		PromptTokens: r.Usage.InputTokens, CompletionTokens: r.Usage.OutputTokens, HTTPStatus: 200}, nil
}
