package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

func (a *app) tokensCommand() *cobra.Command {
	var model string
	cmd := &cobra.Command{
		Use:   "tokens FILE",
		Short: "Count the prompt tokens of a chat request",
		Long: `Print the prompt tokens of the request in FILE ("-" for stdin): {"messages": [...], "tools":
[...]}, or any form import takes (JSONL, a JSON array of messages), counted as OpenAI's
cookbook counts them (3 tokens per message, every string field, 1 per name, 3 to prime the
reply, tool definitions by its num_tokens_for_tools) with the tokenizer of --model, else of
the config's model. Plain output is the integer alone.`,
		Example: `  memctl tokens --model gpt-4o request.json
  memctl tokens conversation.jsonl
  memctl tokens --model gpt-4 --json messages.json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			if model == "" {
				model = cfg.Model
			}
			if model == "" && cfg.Encoding == "" && cfg.EncodingFile == "" {
				return usagef("tokens: no model: give --model or set model in the config")
			}
			msgs, tools, err := readRequest(a.stdin, args[0])
			if err != nil {
				return err
			}
			c, err := a.tokenCounter(cfg, model)
			if err != nil {
				return err
			}
			enc := c.Encoding()
			n := c.CountMessages(msgs) + c.CountTools(tools)
			return a.printResult(map[string]any{"prompt_tokens": n, "encoding": enc}, "%d\n", n)
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "the model whose tokenizer counts (default: the config's model)")
	return cmd
}

// readRequest reads the chat request in FILE ("-" for stdin) with memory.ReadMessages: {"messages":
// [...], "tools": [...]}, a bare array of messages, {"messages": [...]} or JSONL (one message per
// line), with at least one message; a bad input is a usage error with the importer's words.
func readRequest(stdin io.Reader, name string) ([]chat.Message, []chat.Tool, error) {
	data, err := readInput(stdin, name)
	if err != nil {
		return nil, nil, err
	}
	msgs, tools, err := memory.ReadMessages(bytes.NewReader(data))
	if err != nil {
		return nil, nil, usagef("tokens %s: %v", name, err)
	}
	return msgs, tools, nil
}

// tokenCounter returns the counter of the config's encoding_file, or the built-in counter of the
// config's encoding or of model (warning when the model is unknown).
func (a *app) tokenCounter(cfg config.Config, model string) (tokencount.Counter, error) {
	if fc, err := cfg.Counter(); err != nil || fc != nil {
		if err != nil {
			return nil, err
		}
		if err := fc.Load(); err != nil {
			return nil, err
		}
		return fc, nil
	}
	enc, known, err := tokencount.ResolveEncoding(model, cfg.Encoding)
	if err != nil {
		return nil, usageError{err}
	}
	if !known {
		fmt.Fprintf(a.errOut, "memctl: warning: the tokenizer does not know model %q: counting with %s\n", model, enc)
	}
	return tokencount.NewCounter(enc)
}
