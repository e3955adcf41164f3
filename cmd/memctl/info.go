package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/memory"
)

// The commands that read no thread: config, version, tokens.

func (a *app) configCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration",
		Long: `Print the effective configuration, defaults filled in, after the files memctl uses: the
config file (--config, else $MEMCTL_CONFIG, else $XDG_CONFIG_HOME/memctl/config.yaml if it
exists, else the built-in default) and the database (--db, else $MEMCTL_DB, else
$XDG_DATA_HOME/memctl/memctl.db). The working directory is never searched. API keys appear
as the names of the environment variables that hold them, never as values. With --json the
configuration gains "config_file" (null for the built-in default) and "database".`,
		Example: "  memctl config\n  memctl --config agent.yaml config --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			path, from := a.configLocation()
			loc, err := a.database()
			if err != nil {
				return err
			}
			dbState := "does not exist yet: a command that writes creates it"
			if loc.isURL() {
				dbState = "a server database: a command that writes creates its schema when missing"
			} else if _, err := os.Stat(loc.path); err == nil {
				dbState = "exists"
			}
			if a.json {
				return a.printConfigJSON(cfg, path, loc.shown())
			}
			if path != "" {
				fmt.Fprintf(a.out, "# config: %s (from %s)\n", path, from)
			} else {
				fmt.Fprintf(a.out, "# config: %s (%s)\n", config.DefaultSource, from)
			}
			fmt.Fprintf(a.out, "# database: %s (from %s; %s)\n%s", loc.shown(), loc.from, dbState, cfg.YAML())
			return nil
		},
	}
}

// printConfigJSON prints cfg as JSON with "database" (its path) and "config_file" (path, null
// for the built-in default).
func (a *app) printConfigJSON(cfg config.Config, path, database string) error {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	m["database"] = database
	m["config_file"] = nil
	if path != "" {
		m["config_file"] = path
	}
	return a.printJSON(m)
}

// Build stamps, set by a release build:
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD) -X main.date=2025-01-02T03:04:05Z"
//
// Unset, they are read from the build information the go command records (the module version
// of `go install ...@version`, the VCS revision and time of a build in a checkout).
var version, commit, date string

// buildStamp returns the version, commit and build date of this binary ("unknown" when
// nothing recorded them).
func buildStamp() (v, c, d string, modified bool) {
	v, c, d = version, commit, date
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if c == "" {
					c = s.Value
				}
			case "vcs.time":
				if d == "" {
					d = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if c == "" {
		c = "unknown"
	}
	if d == "" {
		d = "unknown"
	}
	return v, c, d, modified
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Long: `Print the version, the commit and the build date of memctl, the schema version it writes
and the Go release that built it. A release build stamps them (see scripts/release); otherwise
they come from what the go command recorded: the module version of "go install ...@VERSION",
the revision and commit time of a build in a checkout ("+dirty" when it had local changes).`,
		Example: "  memctl version\n  memctl version --json | jq -r .commit",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, c, d, dirty := buildStamp()
			if a.json {
				return a.printJSON(map[string]any{"version": v, "commit": c, "date": d, "modified": dirty,
					"schema": db.Version, "go": runtime.Version()})
			}
			if dirty {
				c += "+dirty"
			}
			fmt.Fprintf(a.out, "memctl %s (commit %s, built %s, schema %d, %s)\n", v, c, d, db.Version, runtime.Version())
			return nil
		},
	}
}

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

// readRequest reads the chat request in FILE ("-" for stdin): {"messages": [...], "tools":
// [...]}, a bare array of messages or JSONL (one message per line), with at least one message.
func readRequest(stdin io.Reader, name string) ([]memory.Message, []memory.Tool, error) {
	data, err := readInput(stdin, name)
	if err != nil {
		return nil, nil, err
	}
	var req struct {
		Messages []memory.Message `json:"messages"`
		Tools    []memory.Tool    `json:"tools"`
	}
	t := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	switch {
	case bytes.HasPrefix(t, []byte("[")):
		err = json.Unmarshal(t, &req.Messages)
	case isJSONL(t):
		req.Messages, err = readJSONLMessages(t, name)
		if err != nil {
			return nil, nil, err
		}
	default:
		err = json.Unmarshal(t, &req)
	}
	if err != nil {
		return nil, nil, usagef("tokens %s: %v", name, err)
	}
	if len(req.Messages) == 0 {
		return nil, nil, usagef("tokens %s: no messages (want {\"messages\": [...], \"tools\": [...]}, an array of messages or JSONL)", name)
	}
	return req.Messages, req.Tools, nil
}

// isJSONL reports whether data is JSONL: its first line is a whole JSON object with a "role".
func isJSONL(data []byte) bool {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	var probe struct {
		Role *string `json:"role"`
	}
	return bytes.HasPrefix(first, []byte("{")) && json.Unmarshal(first, &probe) == nil && probe.Role != nil
}

// readJSONLMessages reads one message per non-blank line; an error names the line.
func readJSONLMessages(data []byte, name string) ([]memory.Message, error) {
	var msgs []memory.Message
	for i, line := range bytes.Split(data, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		var m memory.Message
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, usagef("tokens %s: line %d: %v", name, i+1, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// tokenCounter returns the counter of the config's encoding_file, or the built-in counter of the
// config's encoding or of model (warning when the model is unknown).
func (a *app) tokenCounter(cfg config.Config, model string) (memory.TokenCounter, error) {
	if fc, err := cfg.Counter(); err != nil || fc != nil {
		if err != nil {
			return nil, err
		}
		if err := fc.Load(); err != nil {
			return nil, err
		}
		return fc, nil
	}
	enc, known, err := memory.ResolveEncoding(model, cfg.Encoding)
	if err != nil {
		return nil, usageError{err}
	}
	if !known {
		fmt.Fprintf(a.errOut, "memctl: warning: the tokenizer does not know model %q: counting with %s\n", model, enc)
	}
	return memory.NewTokenCounter(enc)
}
