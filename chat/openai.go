package chat

import (
	"encoding/json"
	"fmt"

	openai "github.com/sashabaranov/go-openai"
)

// FromOpenAI converts a go-openai chat message, for agents built on that client. Its fields
// refusal, reasoning_content and function_call, when set, are kept in Extra.
func FromOpenAI(m openai.ChatCompletionMessage) (Message, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return Message{}, fmt.Errorf("convert go-openai message: %w", err)
	}
	var out Message
	if err := json.Unmarshal(b, &out); err != nil {
		return Message{}, fmt.Errorf("convert go-openai message: %w", err)
	}
	return out, nil
}

// OpenAI converts the message to go-openai's type, to send it with that client. Fields that
// type cannot hold (unknown fields in Extra) are dropped; a null content becomes "".
func (m Message) OpenAI() (openai.ChatCompletionMessage, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return openai.ChatCompletionMessage{}, fmt.Errorf("convert message to go-openai: %w", err)
	}
	var out openai.ChatCompletionMessage
	if err := json.Unmarshal(b, &out); err != nil {
		return openai.ChatCompletionMessage{}, fmt.Errorf("convert message to go-openai: %w", err)
	}
	return out, nil
}

// OpenAIMessages converts an active context (or any messages) to go-openai's type.
func OpenAIMessages(msgs []Message) ([]openai.ChatCompletionMessage, error) {
	out := make([]openai.ChatCompletionMessage, len(msgs))
	for i, m := range msgs {
		var err error
		if out[i], err = m.OpenAI(); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	return out, nil
}
