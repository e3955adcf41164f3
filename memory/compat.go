// Transitional (issue 25): removed when the engine moves to package compact.

package memory

import (
	openai "github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/chat"
)

// The chat message lives in package chat; these names let memory's own files use it unchanged
// until they are converted.

type (
	Message      = chat.Message
	ToolCall     = chat.ToolCall
	FunctionCall = chat.FunctionCall
	Tool         = chat.Tool
	ToolFunction = chat.ToolFunction
)

const (
	RoleSystem    = chat.RoleSystem
	RoleDeveloper = chat.RoleDeveloper
	RoleUser      = chat.RoleUser
	RoleAssistant = chat.RoleAssistant
	RoleTool      = chat.RoleTool
)

// TextMessage is chat.TextMessage.
func TextMessage(role, text string) Message { return chat.TextMessage(role, text) }

// FromOpenAI is chat.FromOpenAI.
func FromOpenAI(m openai.ChatCompletionMessage) (Message, error) { return chat.FromOpenAI(m) }

// OpenAIMessages is chat.OpenAIMessages.
func OpenAIMessages(msgs []Message) ([]openai.ChatCompletionMessage, error) {
	return chat.OpenAIMessages(msgs)
}
