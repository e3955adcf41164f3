package config

import (
	"encoding/json"
	"strconv"
)

// Window is a provider's context_window: a number of tokens, or WindowAuto.
type Window int

// WindowAuto is `context_window: auto`: the window is read from the provider's server
// (Ollama, llama.cpp's server, vLLM and other OpenAI-compatible servers that report it) and
// cached with the provider; when the server does not say, 4096 tokens are assumed and a
// warning says so.
const WindowAuto Window = -1

// String is "auto" or the number of tokens.
func (w Window) String() string {
	if w == WindowAuto {
		return "auto"
	}
	return strconv.Itoa(int(w))
}

// MarshalJSON writes "auto" or the number.
func (w Window) MarshalJSON() ([]byte, error) {
	if w == WindowAuto {
		return json.Marshal("auto")
	}
	return json.Marshal(int(w))
}

// MarshalYAML writes auto or the number.
func (w Window) MarshalYAML() (any, error) {
	if w == WindowAuto {
		return "auto", nil
	}
	return int(w), nil
}
