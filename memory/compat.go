// Transitional (issue 25): removed when the engine moves to package compact.

package memory

import (
	openai "github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/tokencount"
)

// The chat message lives in package chat, token counting in package tokencount; these names let
// memory's own files use them unchanged until they are converted.

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

type (
	TokenCounter = tokencount.Counter
	BPECounter   = tokencount.BPECounter
)

const (
	EncodingO200k      = tokencount.EncodingO200k
	EncodingCL100k     = tokencount.EncodingCL100k
	EncodingP50k       = tokencount.EncodingP50k
	EncodingR50k       = tokencount.EncodingR50k
	FileEncodingPrefix = tokencount.FileEncodingPrefix
	ReplyPriming       = tokencount.ReplyPriming
)

// NewTokenCounter is tokencount.NewCounter.
func NewTokenCounter(encoding string) (*BPECounter, error) { return tokencount.NewCounter(encoding) }

// NewFileCounter is tokencount.NewFileCounter.
func NewFileCounter(path, pattern string) (*BPECounter, error) {
	return tokencount.NewFileCounter(path, pattern)
}

// Encodings is tokencount.Encodings.
func Encodings() []string { return tokencount.Encodings() }

// ResolveEncoding is tokencount.ResolveEncoding.
func ResolveEncoding(model, override string) (encoding string, known bool, err error) {
	return tokencount.ResolveEncoding(model, override)
}

func countMessageWithText(counter TokenCounter, m Message, text string) int {
	return tokencount.CountMessageWithText(counter, m, text)
}
