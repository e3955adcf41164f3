package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/eval"
	"github.com/memcascade/memcascade/tokencount"
)

func (a *app) evalCommand() *cobra.Command {
	var (
		limit, maxProbes  int
		strategies, files []string
		cascades          []string
		answerWith, model string
		html              string
	)
	cmd := &cobra.Command{
		Use:               "eval THREAD|FILE",
		ValidArgsFunction: a.completeThreads,
		Short:             "Measure what compaction keeps of a thread",
		Long: `Replay FILE (an import file: JSONL, a JSON array, or {"messages": [...]}; "-" for stdin),
or, when no file has that name, THREAD (a thread of the database) message by message into a scratch database, compacting
when due, once per configuration (each --strategy, at --limit tokens, over the other settings
of $MEMCTL_CONFIG or the user's config file; each --config FILE, its compaction settings and
cascades, named by the file's base name), and ask probes generated from the original messages after each compaction and at
the end: recall (a value given in a message), artifact (a call and what it returned),
constraint (a user's constraint) and continuation (the latest user request). Each probe is
asked with the compacted context and, as a baseline, with the newest messages of the full
history that fit the same limit; an answer counts when it is the expected value, case,
spacing and quotes aside. The thread is never changed: summaries come from the offline
summarizer, or, for each --cascade NAME, from that cascade of the config (default: the top-level
one; its providers are asked for real, with the config's part_cascade), a configuration
named STRATEGY@NAME. The answers come from the built-in lookup, or from --answer-with, an
OpenAI-compatible API (its key from MEMCTL_EVAL_API_KEY, else OPENAI_API_KEY). Progress goes to
stderr when it is a terminal; Ctrl-C prints what was measured so far. --html FILE also writes
the comparison as a page (a chart of recall by probe kind, compacted and baseline, and the
table), mode 0600. See docs/eval.md.`,
		Example: `  memctl eval support-42 --limit 8000 --strategy summarize --strategy window
  memctl eval conversation.jsonl --limit 4000 --strategy summarize --strategy mask --json
  memctl eval conversation.jsonl --config small.yaml --config large.yaml --strategy window
  memctl eval conversation.jsonl --limit 4000 --answer-with http://localhost:8080/v1 --model small
  memctl eval support-42 --limit 8000 --cascade cheap --cascade default
  memctl eval conversation.jsonl --limit 4000 --strategy summarize --strategy window --html eval.html`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.eval(cmd, args[0], evalFlags{limit: limit, maxProbes: maxProbes, strategies: strategies, files: files, cascades: cascades, answerWith: answerWith, model: model, html: html})
		},
	}
	f := cmd.Flags()
	f.IntVar(&limit, "limit", 0, "token_limit of every configuration (default: the config's)")
	f.StringArrayVar(&strategies, "strategy", nil, "a configuration: summarize, mask, hybrid or window (repeat to compare; default: the config's)")
	// In eval, --config names a configuration to compare; the settings the --strategy
	// configurations start from are the config file's of $MEMCTL_CONFIG or the user's.
	f.StringArrayVar(&files, "config", nil, "a configuration: this config file's compaction settings and cascades, named by its base name (repeat to compare; --limit overrides its limit)")
	f.StringArrayVar(&cascades, "cascade", nil, "a configuration whose summaries come from this cascade of the config (default, or a name of cascades; repeat to compare; default: the offline summarizer)")
	cmd.RegisterFlagCompletionFunc("cascade", a.completeCascade)
	f.StringVar(&answerWith, "answer-with", "", "answer with the model of this OpenAI-compatible API base URL, ending in /v1 (default: the built-in lookup)")
	f.StringVar(&model, "model", "", "the model of --answer-with")
	f.StringVar(&html, "html", "", "also write the comparison as an HTML page to this file")
	f.IntVar(&maxProbes, "max-probes", 20, "at most this many probes of each kind at each checkpoint (0: all)")
	return cmd
}

type evalFlags struct {
	limit, maxProbes  int
	strategies, files []string
	cascades          []string
	answerWith, model string
	html              string
}

// eval runs the evaluation of src (a file, or else a thread) and prints its table.
func (a *app) eval(cmd *cobra.Command, src string, fl evalFlags) error {
	ctx := cmd.Context()
	cfg, err := a.config()
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("limit") {
		if err := positiveFlag("limit", fl.limit); err != nil {
			return err
		}
	}
	if fl.html != "" {
		// Checked first: a page that cannot be written would lose the whole run's measure.
		if st, err := os.Stat(filepath.Dir(fl.html)); err != nil || !st.IsDir() {
			return usagef("--html %s: %s is not a directory", fl.html, filepath.Dir(fl.html))
		}
	}
	if fl.maxProbes < 0 {
		return usagef("--max-probes %d: must be zero or a positive whole number", fl.maxProbes)
	}
	configs, err := a.evalConfigs(cmd, cfg, fl)
	if err != nil {
		return err
	}
	answerer, err := a.evalAnswerer(fl)
	if err != nil {
		return err
	}
	msgs, model, err := a.evalMessages(ctx, src)
	if err != nil && ctx.Err() != nil { // stopped while reading: nothing measured
		return a.printEval(eval.Result{Interrupted: true}, ctx.Err(), "")
	}
	if err != nil {
		return err
	}
	if model == "" {
		model = cfg.Model
	}
	opt := eval.Options{Messages: msgs, Model: model, Configs: configs, Answerer: answerer, MaxProbes: fl.maxProbes}
	if isTerminal(a.stderr) {
		opt.Progress = func(line string) { fmt.Fprintf(a.errOut, "memctl: eval: %s\n", line); a.errOut.Flush() }
	}
	res, err := eval.Run(ctx, opt)
	if err != nil && !res.Interrupted {
		return err
	}
	return a.printEval(res, err, fl.html)
}

// evalConfigs are the configurations of the flags: each strategy, with the offline summarizer,
// or with each cascade of --cascade (named STRATEGY@CASCADE).
func (a *app) evalConfigs(cmd *cobra.Command, cfg config.Config, fl evalFlags) ([]eval.Config, error) {
	base := cfg.Settings()
	if len(fl.strategies) == 0 && len(fl.files) == 0 {
		fl.strategies = []string{base.WithDefaults().Strategy}
	}
	cascades := fl.cascades
	if len(cascades) == 0 {
		cascades = []string{""} // the offline summarizer
	}
	var configs []eval.Config
	for _, s := range fl.strategies {
		for _, name := range cascades {
			over := compact.ThreadSettings{Strategy: s, Cascade: name}
			if name == "" { // the offline summarizer reads the whole middle
				over.Cascade, over.PartCascade = compact.DefaultCascade, compact.NoCascade
			}
			if fl.limit > 0 {
				over.TokenLimit = &fl.limit
			}
			set, err := compact.Resolve(base, compact.ThreadSettings{}, over)
			if err != nil {
				if name != "" {
					return nil, usagef("eval: --strategy %s --cascade %s: %v", s, name, err)
				}
				return nil, usagef("eval: --strategy %s: %v", s, err)
			}
			c := eval.Config{Name: s, Settings: set}
			if name != "" {
				if err := unknownCascade(cmd, "eval", cfg, set); err != nil {
					return nil, err
				}
				c.Name = s + "@" + name
				c.Compactor = func(sc eval.Scratch, set compact.Settings) (*compact.Compactor, error) {
					return a.evalCompactor(cfg, sc, set)
				}
			}
			configs = append(configs, c)
		}
	}
	for _, file := range fl.files {
		c, err := a.evalConfigFile(file, fl.limit)
		if err != nil {
			return nil, err
		}
		for _, o := range configs {
			if o.Name == c.Name {
				return nil, usagef("--config %s: a configuration is already named %s", file, c.Name)
			}
		}
		configs = append(configs, c)
	}
	return configs, nil
}

// evalConfigFile is the configuration of the config file path: its compaction settings (at
// limit tokens when limit > 0) and its cascades (with the offline rung each adds), named by the
// file's base name without its extension.
func (a *app) evalConfigFile(path string, limit int) (eval.Config, error) {
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	cfg, err := config.Load(path)
	if err != nil {
		return eval.Config{}, usagef("--config %v", err) // the error names the file
	}
	set := cfg.Settings()
	if limit > 0 {
		over := compact.ThreadSettings{TokenLimit: &limit}
		if set, err = compact.Resolve(set, compact.ThreadSettings{}, over); err != nil {
			return eval.Config{}, usagef("--config %s: --limit %d: %v", path, limit, err)
		}
	}
	return eval.Config{Name: name, Settings: set, Compactor: func(sc eval.Scratch, set compact.Settings) (*compact.Compactor, error) {
		return a.evalCompactor(cfg, sc, set)
	}}, nil
}

// evalCompactor is the compactor of a configuration of --cascade on its scratch database sc:
// the config's cascades on it (their cooldowns and attempts stay there), the config's
// redaction, and the configuration's settings.
func (a *app) evalCompactor(cfg config.Config, sc eval.Scratch, set compact.Settings) (*compact.Compactor, error) {
	st := sc.Store
	counter, err := st.Counter(tokencount.EncodingO200k)
	if err != nil {
		return nil, err
	}
	red, err := cfg.Redactor()
	if err != nil {
		return nil, err
	}
	opt := cascade.Options{Count: counter.CountText, Logger: a.logger, Now: st.Now}
	def, err := cfg.NewCascade(sc.DB, opt)
	if err != nil {
		return nil, err
	}
	named, err := cfg.NewCascades(sc.DB, opt)
	if err != nil {
		return nil, err
	}
	sums := make(map[string]compact.Summarizer, len(named))
	for name, c := range named {
		sums[name] = c
	}
	return compact.NewWith(st, def, set, compact.Config{Summarizers: sums, Logger: a.logger, Pace: def.TimeFor,
		Redact: func(s string) string { out, _ := red.Redact(s); return out }}), nil
}

// printEval prints the table (or JSON) of res; an interrupted run is then the error err.
func (a *app) printEval(res eval.Result, err error, page string) error {
	if page != "" {
		if perr := writePage(page, res); perr != nil {
			return perr
		}
	}
	if a.json {
		if perr := a.printJSON(res); perr != nil {
			return perr
		}
	} else {
		var b strings.Builder
		eval.Table(&b, res)
		fmt.Fprint(a.out, b.String())
	}
	if res.Interrupted {
		return fmt.Errorf("eval: interrupted: %w", err)
	}
	return nil
}

// writePage writes res as eval's HTML page to path, mode 0600, whole or not at all: into a
// file of its own beside path, renamed over it.
func writePage(path string, res eval.Result) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".memctl-eval-*.html")
	if err != nil {
		return fmt.Errorf("eval: --html %s: %w", path, err)
	}
	tmp := f.Name()
	err = eval.Page(f, res)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("eval: --html %s: %w", path, err)
	}
	return nil
}

// evalAnswerer is the answerer of the flags: the lookup, or the API of --answer-with.
func (a *app) evalAnswerer(fl evalFlags) (eval.Answerer, error) {
	if fl.answerWith == "" {
		if fl.model != "" {
			return nil, usagef("--model %s: needs --answer-with", fl.model)
		}
		return eval.Lookup{}, nil
	}
	u, err := url.Parse(fl.answerWith)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
		return nil, usagef("--answer-with %s: must be an http(s) URL ending in /v1", fl.answerWith)
	}
	if fl.model == "" {
		return nil, usagef("--answer-with %s: needs --model", fl.answerWith)
	}
	key := a.getenv("MEMCTL_EVAL_API_KEY")
	if key == "" {
		key = a.getenv("OPENAI_API_KEY")
	}
	return eval.Remote{BaseURL: fl.answerWith, Model: fl.model, APIKey: key}, nil
}

// evalMessages reads the thread's messages: from the file src when there is one ("-": stdin),
// else from the thread src of the database, with the thread's model.
func (a *app) evalMessages(ctx context.Context, src string) ([]chat.Message, string, error) {
	if st, err := os.Stat(src); src == "-" || (err == nil && !st.IsDir()) {
		r, closeInput, err := openInput(a.stdin, src)
		if err != nil {
			return nil, "", err
		}
		defer closeInput()
		msgs, err := eval.Load(ctx, r)
		if err != nil {
			return nil, "", usagef("eval %s: %v", src, err)
		}
		return msgs, "", nil
	}
	if err := threadArg(src); err != nil {
		return nil, "", err
	}
	s, t, err := a.openThread(ctx, forReading, src)
	if err != nil {
		return nil, "", err
	}
	hist, err := s.History(ctx, src)
	if err != nil {
		return nil, "", err
	}
	if len(hist) == 0 {
		return nil, "", errors.New("eval: thread " + src + " has no messages")
	}
	msgs := make([]chat.Message, len(hist))
	for i, e := range hist {
		msgs[i] = e.Message
	}
	return msgs, t.Model, nil
}
