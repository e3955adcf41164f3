package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
)

// Hooks are the commands the compactor runs around a compaction (see compact.Config's
// BeforeCompaction and AfterCompaction).
type Hooks struct {
	// BeforeCompaction reads the compaction's event (compact.HookEvent) as JSON on its stdin
	// and may print a decision (compact.HookDecision) as JSON on its stdout: skip it, add
	// instructions to its prompt, or give its summary.
	BeforeCompaction *Hook `yaml:"before_compaction,omitempty" json:"before_compaction,omitempty"`
	// AfterCompaction reads the report of the compaction as JSON on its stdin.
	AfterCompaction *Hook `yaml:"after_compaction,omitempty" json:"after_compaction,omitempty"`
}

// Hook is a command the compactor runs, with no shell: Command[0] is the program (a path with
// a slash is relative to the config file's directory, a bare name is looked up in PATH), the
// rest its arguments. A hook that exits non-zero, outlives Timeout or prints what is not the
// JSON it should is logged, and the compaction proceeds.
type Hook struct {
	Command []string `yaml:"command" json:"command"`
	Timeout Duration `yaml:"timeout" json:"timeout"`
}

// DefaultHookTimeout is the default timeout of a hook.
const DefaultHookTimeout = Duration(10 * time.Second)

// maxHookOutput bounds what a hook's stdout may hold (a summary fits many times), and
// maxHookStderr what of its stderr is kept for the log (its last line, redacted).
const (
	maxHookOutput = 1 << 20
	maxHookStderr = 4 << 10
	maxLoggedLine = 200
)

// hooksFields are the keys of hooks.
func hooksFields(h *Hooks, w *walker) []field {
	one := func(dst **Hook) func(n *yaml.Node, key string, line int) {
		return func(n *yaml.Node, key string, line int) {
			if n.Kind != yaml.MappingNode {
				w.errorf(line, key, "expected a mapping with command and timeout, found %s", describe(n))
				return
			}
			hk := &Hook{}
			set := w.mapping(n, key, []field{
				{key: "command", sub: func(n *yaml.Node, key string, line int) { hk.Command = w.argv(n, key, line) }},
				{key: "timeout", ptr: &hk.Timeout},
			})
			if !set["timeout"] {
				hk.Timeout = DefaultHookTimeout
			}
			*dst = hk
		}
	}
	return []field{
		{key: "before_compaction", sub: one(&h.BeforeCompaction)},
		{key: "after_compaction", sub: one(&h.AfterCompaction)},
	}
}

// argv decodes a hook's command: a list of strings.
func (w *walker) argv(n *yaml.Node, key string, line int) []string {
	if n.Kind != yaml.SequenceNode {
		w.errorf(line, key, "expected a list: the program, then its arguments (no shell), found %s", describe(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		k := fmt.Sprintf("%s[%d]", key, i)
		w.lines[k] = item.Line
		var s string
		if it := resolve(item); isNull(it) {
			w.errorf(item.Line, k, "expected a string, found null")
		} else {
			w.scalar(it, k, item.Line, &s)
		}
		out = append(out, s)
	}
	return out
}

// decodeHooks decodes the hooks section.
func (w *walker) decodeHooks(h *Hooks) func(n *yaml.Node, key string, line int) {
	return func(n *yaml.Node, key string, line int) {
		if n.Kind != yaml.MappingNode {
			w.errorf(line, key, "expected a mapping of hooks (before_compaction, after_compaction), found %s", describe(n))
			return
		}
		w.mapping(n, key, hooksFields(h, w))
	}
}

// validateHooks checks each hook: a command of non-empty strings, a positive timeout.
func (ck *checker) validateHooks(h Hooks) {
	for _, x := range []struct {
		key string
		h   *Hook
	}{{"hooks.before_compaction", h.BeforeCompaction}, {"hooks.after_compaction", h.AfterCompaction}} {
		if x.h == nil || ck.skip(x.key) {
			continue
		}
		cmd := x.key + ".command"
		if len(x.h.Command) == 0 && !ck.skip(cmd) {
			ck.add(cmd, "is required: the program to run and its arguments, e.g. [\"/usr/local/bin/hook\", \"--json\"]")
		}
		for i, a := range x.h.Command {
			ck.checkText(fmt.Sprintf("%s[%d]", cmd, i), a, i == 0)
		}
		ck.positive(x.key+".timeout", x.h.Timeout)
	}
}

// withHookDefaults fills the timeout of the hooks a config built in Go left at zero.
func (h Hooks) withDefaults() Hooks {
	for _, p := range []**Hook{&h.BeforeCompaction, &h.AfterCompaction} {
		if *p != nil {
			c := **p
			if c.Timeout == 0 {
				c.Timeout = DefaultHookTimeout
			}
			c.Command = append([]string(nil), c.Command...)
			*p = &c
		}
	}
	return h
}

// hookRunner runs the config's hooks for a compactor: it logs their failures (redacted) to
// logger, and the compaction proceeds.
type hookRunner struct {
	dir    string // the config file's directory ("": none)
	logger *slog.Logger
	redact func(string) string
}

// setHooks gives comp the config's hooks, unless it has its own.
func (c Config) setHooks(comp *compact.Config, red func(string) string) {
	h := c.Hooks.withDefaults()
	if h.BeforeCompaction == nil && h.AfterCompaction == nil {
		return
	}
	r := hookRunner{logger: comp.Logger, redact: red}
	if r.logger == nil {
		r.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if c.Source != "" && c.Source != DefaultSource {
		r.dir = filepath.Dir(c.Source)
	}
	if hk := h.BeforeCompaction; hk != nil && comp.BeforeCompaction == nil {
		comp.BeforeCompaction = func(ctx context.Context, ev compact.HookEvent) (compact.HookDecision, error) {
			d, err := r.before(ctx, *hk, ev)
			if err != nil {
				r.failed(ctx, "before_compaction", *hk, ev.Thread, err)
				return compact.HookDecision{}, nil
			}
			return d, nil
		}
	}
	if hk := h.AfterCompaction; hk != nil && comp.AfterCompaction == nil {
		comp.AfterCompaction = func(ctx context.Context, rep memory.Report) {
			in, err := json.Marshal(rep)
			if err == nil {
				_, err = r.run(context.WithoutCancel(ctx), *hk, in) // told even when the caller is gone
			}
			if err != nil {
				r.failed(ctx, "after_compaction", *hk, rep.Thread, err)
			}
		}
	}
}

// before runs the before hook with ev and reads its decision: empty output is proceed.
func (r hookRunner) before(ctx context.Context, hk Hook, ev compact.HookEvent) (compact.HookDecision, error) {
	in, err := json.Marshal(ev)
	if err != nil {
		return compact.HookDecision{}, err
	}
	out, err := r.run(ctx, hk, in)
	if err != nil {
		return compact.HookDecision{}, err
	}
	var d compact.HookDecision
	if len(bytes.TrimSpace(out)) == 0 {
		return d, nil
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return compact.HookDecision{}, fmt.Errorf("its output is not the JSON of a decision ({\"action\", \"instructions\", \"summary\"}): %w", err)
	}
	if dec.More() {
		return compact.HookDecision{}, errors.New("its output holds more than one JSON value")
	}
	switch d.Action {
	case "", compact.HookProceed, compact.HookSkip:
	default:
		return compact.HookDecision{}, fmt.Errorf("action %q: want %s or %s", d.Action, compact.HookProceed, compact.HookSkip)
	}
	return d, nil
}

// run runs hk with in on its stdin, within its timeout, and returns its stdout.
func (r hookRunner) run(ctx context.Context, hk Hook, in []byte) ([]byte, error) {
	if len(hk.Command) == 0 {
		return nil, errors.New("no command")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(hk.Timeout))
	defer cancel()
	prog := hk.Command[0]
	if strings.ContainsRune(prog, filepath.Separator) && !filepath.IsAbs(prog) && r.dir != "" {
		prog = filepath.Join(r.dir, prog)
	}
	cmd := exec.CommandContext(ctx, prog, hk.Command[1:]...)
	cmd.Stdin = bytes.NewReader(in)
	stdout, stderr := &capped{max: maxHookOutput}, &capped{max: maxHookStderr, keepTail: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 100 * time.Millisecond // a child still holding the pipes does not hold the compaction
	err := cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("timed out after %s", time.Duration(hk.Timeout))
	case err != nil:
		if line := lastLine(stderr.b.String()); line != "" {
			return nil, fmt.Errorf("%w (stderr: %s)", err, r.redact(line))
		}
		return nil, err
	case stdout.over:
		return nil, fmt.Errorf("its output is over %d bytes", maxHookOutput)
	}
	return stdout.b.Bytes(), nil
}

// failed logs a hook's failure: the hook, its program (not its arguments) and the error,
// redacted.
func (r hookRunner) failed(ctx context.Context, name string, hk Hook, thread string, err error) {
	prog := ""
	if len(hk.Command) > 0 {
		prog = filepath.Base(hk.Command[0])
	}
	r.logger.LogAttrs(context.WithoutCancel(ctx), slog.LevelWarn, "hook failed; the compaction proceeds",
		slog.String("hook", name), slog.String("program", r.redact(prog)), slog.String("thread", thread),
		slog.String("error", r.redact(err.Error())))
}

// lastLine is the last non-empty line of s, at most maxLoggedLine bytes of it.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	if len(s) > maxLoggedLine {
		s = strings.ToValidUTF8(s[:maxLoggedLine], "") + "…"
	}
	return s
}

// capped keeps at most max bytes written to it: the first ones, or the last (keepTail).
type capped struct {
	b        bytes.Buffer
	max      int
	over     bool
	keepTail bool
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if c.keepTail {
		c.b.Write(p)
		if extra := c.b.Len() - c.max; extra > 0 {
			rest := append([]byte(nil), c.b.Bytes()[extra:]...)
			c.b.Reset()
			c.b.Write(rest)
		}
		return n, nil
	}
	if room := c.max - c.b.Len(); len(p) > room {
		c.over = true
		p = p[:max(room, 0)]
	}
	c.b.Write(p)
	return n, nil
}
