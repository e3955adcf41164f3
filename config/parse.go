package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memcascade/memcascade/compact"
	"go.yaml.in/yaml/v3"
)

// Parse reads a YAML config. name is the file name used in error messages
// ("memctl.yaml:12: compaction.target_ratio: 1.5 is outside (0, 1]") and
// becomes the Source of the result.
//
// Keys that are absent (or null) take their defaults; an empty file yields
// the defaults. On failure Parse returns the zero Config and every problem it
// found as *Error values in line order: the *Error itself when there is one,
// errors.Join of them otherwise.
func Parse(data []byte, name string) (Config, error) {
	w := &walker{file: name, lines: map[string]int{}, bad: map[string]bool{}}
	cfg := Default()
	cfg.Source = name

	root, err := decodeDocument(data)
	if err != nil {
		w.errs = append(w.errs, syntaxError(name, data, err))
		return Config{}, joinErrors(w.errs)
	}
	if root != nil {
		w.top(root, &cfg)
	}
	ck := &checker{file: name, lines: w.lines, bad: w.bad}
	ck.validate(cfg)
	w.errs = append(w.errs, ck.errs...)
	if err := joinErrors(w.errs); err != nil {
		return Config{}, err
	}
	if cfg.Compaction.PromptFile != "" {
		cfg.Compaction.Prompt, _ = compact.LoadPrompt(cfg.PromptPath()) // checked above
	}
	return cfg, nil
}

// Load reads the config file at path. Load("") returns [Default]. A file
// that cannot be read is an *Error naming it that wraps the fs error (so
// errors.Is(err, fs.ErrNotExist) works).
func Load(path string) (Config, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		msg := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		return Config{}, &Error{File: path, Msg: "cannot read config file: " + msg, Err: err}
	}
	return Parse(data, path)
}

// Locate returns the config path memctl uses: flag if it is not empty, else
// $MEMCTL_CONFIG if it is set and not empty, else the per-user file ([UserPath])
// if it exists (or cannot be checked, so that Load reports why), else "" (the
// built-in default). The working directory is never searched.
func Locate(flag string) string {
	if flag != "" {
		return flag
	}
	if v := os.Getenv(EnvVar); v != "" {
		return v
	}
	path, err := UserPath()
	if err != nil {
		return ""
	}
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return path
	}
	return ""
}

// decodeDocument returns the root node of the single document in data, or
// nil when data holds no document or a null one.
func decodeDocument(data []byte) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("yaml: cannot parse (%v)", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	for {
		var extra yaml.Node
		err := dec.Decode(&extra)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if n := docRoot(&extra); n != nil {
			return nil, &extraDocError{line: n.Line}
		}
	}
	return docRoot(&doc), nil
}

// docRoot returns the content of a document node, or nil if it is null.
func docRoot(doc *yaml.Node) *yaml.Node {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	n := doc.Content[0]
	if isNull(n) {
		return nil
	}
	return n
}

type extraDocError struct{ line int }

func (e *extraDocError) Error() string { return "a config file holds one YAML document" }

var yamlLineRE = regexp.MustCompile(`^line (\d+): `)

// syntaxError turns a YAML parser error into an *Error with the line on
// which the problem is detected. The parser reports some lines 0-based and
// omits others, so the line is found by parsing prefixes of data that end at
// line ends: it is the line whose prefix starts failing with the same
// message. The parser's own line is the fallback.
func syntaxError(file string, data []byte, err error) *Error {
	var xe *extraDocError
	if errors.As(err, &xe) {
		return &Error{File: file, Line: xe.line, Msg: xe.Error(), Err: err}
	}
	msg, line := splitYAMLError(err)
	if l := firstFailingLine(data, msg); l > 0 {
		line = l
	}
	return &Error{File: file, Line: line, Msg: "invalid YAML: " + msg, Err: err}
}

func splitYAMLError(err error) (msg string, line int) {
	msg = strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	return msg, line
}

func firstFailingLine(data []byte, msg string) int {
	// ends[i] is the length of the prefix holding lines 1..i+1.
	var ends []int
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	fails := func(i int) bool {
		_, err := decodeDocument(data[:ends[i]])
		if err == nil {
			return false
		}
		m, _ := splitYAMLError(err)
		return m == msg
	}
	last := len(ends) - 1
	if !fails(last) {
		return 0
	}
	if len(ends) <= 500 {
		// The error line is the one after the last prefix that does not
		// fail this way (an earlier prefix may fail the same way for a
		// different reason, e.g. a flow list that is closed on a later line).
		for i := last - 1; i >= 0; i-- {
			if !fails(i) {
				return i + 2
			}
		}
		return 1
	}
	// Long input: binary search for a line at which the error appears.
	lo, hi := -1, last // the empty prefix does not fail; fails(hi)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi + 1
}

// walker walks the YAML node tree against the known keys, decoding values
// and recording the line of every key it sees.
type walker struct {
	file  string
	lines map[string]int  // key path -> line, for keys present with a non-null value and list items
	bad   map[string]bool // key paths whose value could not be decoded
	errs  []*Error
}

func (w *walker) errorf(line int, key, format string, args ...any) {
	w.errs = append(w.errs, &Error{File: w.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
	w.bad[key] = true
}

// field is a known key: either a scalar decoded into ptr (*string, *int,
// *float64 or *Duration) or a compound value handled by sub.
type field struct {
	key string
	ptr any
	sub func(n *yaml.Node, key string, line int)
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// describe names a value for an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "null"
		}
		return quote(n.Value)
	}
	return "nothing"
}

// quote quotes a value for an error message, shortening long ones.
func quote(s string) string {
	const max = 60
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max]) + "…"
	}
	return strconv.Quote(s)
}

func (w *walker) top(n *yaml.Node, cfg *Config) {
	if n.Kind != yaml.MappingNode {
		w.errorf(n.Line, "", "the config must be a mapping of settings, not %s", describe(n))
		return
	}
	w.mapping(n, "", []field{
		{key: "model", ptr: &cfg.Model},
		{key: "encoding", ptr: &cfg.Encoding},
		{key: "encoding_file", ptr: &cfg.EncodingFile},
		{key: "encoding_pattern", ptr: &cfg.EncodingPattern},
		{key: "compaction", sub: func(n *yaml.Node, key string, line int) {
			if n.Kind != yaml.MappingNode {
				w.errorf(line, key, "expected a mapping of compaction settings, found %s", describe(n))
				return
			}
			w.mapping(n, key, w.compactionSection(&cfg.Compaction))
		}},
		{key: "redact_patterns", sub: func(n *yaml.Node, key string, line int) {
			if n.Kind != yaml.SequenceNode {
				w.errorf(line, key, "expected a list of regular expressions, found %s", describe(n))
				return
			}
			pats := make([]string, 0, len(n.Content))
			for i, item := range n.Content {
				k := fmt.Sprintf("%s[%d]", key, i)
				w.lines[k] = item.Line
				var s string
				if it := resolve(item); isNull(it) {
					w.errorf(item.Line, k, "expected a regular expression, found null")
				} else {
					w.scalar(it, k, item.Line, &s)
				}
				pats = append(pats, s)
			}
			cfg.RedactPatterns = pats
		}},
		{key: "cascade", sub: func(n *yaml.Node, key string, line int) { cfg.Cascade = w.providers(n, key, line) }},
		{key: "cascades", sub: func(n *yaml.Node, key string, line int) { cfg.Cascades = w.cascades(n, key, line) }},
		{key: "offline", ptr: &cfg.Offline},
		{key: "hooks", sub: w.decodeHooks(&cfg.Hooks)},
		{key: "serve", sub: func(n *yaml.Node, key string, line int) {
			if n.Kind != yaml.MappingNode {
				w.errorf(line, key, "expected a mapping of serve settings, found %s", describe(n))
				return
			}
			w.mapping(n, key, w.serveSection(&cfg.Serve))
		}},
	})
}

func serveFields(s *Serve) []field {
	return []field{
		{key: "listen", ptr: &s.Listen},
		{key: "upstream", ptr: &s.Upstream},
		{key: "upstream_key_env", ptr: &s.UpstreamKeyEnv},
		{key: "token_env", ptr: &s.TokenEnv},
		{key: "recall", ptr: &s.Recall},
		{key: "price_per_mtok", sub: nil}, // set by the walker (walker.price)
	}
}

// noticeFields are the keys of serve.notice.
func noticeFields(n *Notice) []field {
	return []field{
		{key: "enabled", ptr: &n.Enabled},
		{key: "at_ratio", ptr: &n.AtRatio},
	}
}

// serveSection are the keys of the serve section: serveFields and notice, a mapping of
// noticeFields.
func (w *walker) serveSection(s *Serve) []field {
	fields := serveFields(s)
	fields[len(fields)-1].sub = w.price(&s.PricePerMTok) // price_per_mtok
	return append(fields, field{key: "notice", sub: func(n *yaml.Node, key string, line int) {
		if n.Kind != yaml.MappingNode {
			w.errorf(line, key, "expected a mapping of notice settings (enabled, at_ratio), found %s", describe(n))
			return
		}
		w.mapping(n, key, noticeFields(&s.Notice))
	}})
}

func compactionFields(c *Compaction) []field {
	return []field{
		{key: "token_limit", ptr: &c.TokenLimit},
		{key: "reserve_tokens", ptr: &c.ReserveTokens},
		{key: "target_ratio", ptr: &c.TargetRatio},
		{key: "trigger_ratio", ptr: &c.TriggerRatio},
		{key: "summary_max_tokens", ptr: &c.SummaryMaxTokens},
		{key: "summary_role", ptr: &c.SummaryRole},
		{key: "max_passes", ptr: &c.MaxPasses},
		{key: "attempt_timeout", ptr: &c.AttemptTimeout},
		{key: "total_timeout", ptr: &c.TotalTimeout},
		{key: "strategy", ptr: &c.Strategy},
		{key: "emergency_ratio", ptr: &c.EmergencyRatio},
		{key: "on_failure", ptr: &c.OnFailure},
		{key: "prompt_file", ptr: &c.PromptFile},
		{key: "keep_turns", ptr: &c.KeepTurns},
		{key: "compact_every_turns", ptr: &c.CompactEveryTurns},
		{key: "max_failures", ptr: &c.MaxFailures},
		{key: "cascade", ptr: &c.Cascade},
		{key: "part_cascade", ptr: &c.PartCascade},
		{key: "max_cost", ptr: &c.MaxCost},
		{key: "queue_size", ptr: &c.QueueSize},
	}
}

func providerFields(p *Provider) []field {
	return []field{
		{key: "name", ptr: &p.Name},
		{key: "type", ptr: &p.Type},
		{key: "base_url", ptr: &p.BaseURL},
		{key: "model", ptr: &p.Model},
		{key: "api_key_env", ptr: &p.APIKeyEnv},
		{key: "context_window", ptr: &p.ContextWindow},
		{key: "max_output_tokens", ptr: &p.MaxOutputTokens},
		{key: "temperature", ptr: &p.Temperature},
		{key: "timeout", ptr: &p.Timeout},
		{key: "max_attempts", ptr: &p.MaxAttempts},
		{key: "max_wait", ptr: &p.MaxWait},
		{key: "concurrency", ptr: &p.Concurrency},
		{key: "cooldown", ptr: &p.Cooldown},
		{key: "max_cooldown", ptr: &p.MaxCooldown},
		{key: "price_per_mtok", sub: nil}, // set by the walker (walker.price)
	}
}

// providers decodes a list of providers (the cascade, or one of cascades).
func (w *walker) providers(n *yaml.Node, key string, line int) []Provider {
	if n.Kind != yaml.SequenceNode {
		w.errorf(line, key, "expected a list of providers, found %s", describe(n))
		return nil
	}
	ps := make([]Provider, 0, len(n.Content))
	for i, item := range n.Content {
		k := fmt.Sprintf("%s[%d]", key, i)
		w.lines[k] = item.Line
		it := resolve(item)
		if it.Kind != yaml.MappingNode {
			w.errorf(item.Line, k, "expected a provider (a mapping with at least a name), found %s", describe(it))
			ps = append(ps, Provider{})
			continue
		}
		ps = append(ps, w.provider(it, k))
	}
	return ps
}

// cascades decodes the cascades section: a mapping of names to lists of providers.
func (w *walker) cascades(n *yaml.Node, key string, line int) map[string][]Provider {
	if n.Kind != yaml.MappingNode {
		w.errorf(line, key, "expected a mapping of cascade names to lists of providers, found %s", describe(n))
		return nil
	}
	out := map[string][]Provider{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := resolve(kn)
		if k.Kind != yaml.ScalarNode {
			w.errorf(kn.Line, key, "keys must be plain strings, found %s", describe(k))
			continue
		}
		full := joinKey(key, k.Value)
		if _, dup := out[k.Value]; dup {
			w.errorf(kn.Line, full, "duplicate cascade (first set at line %d)", w.lines[full])
			continue
		}
		w.lines[full] = kn.Line
		if v := resolve(vn); isNull(v) {
			w.errorf(kn.Line, full, "expected a list of providers, found null")
			out[k.Value] = nil
		} else {
			out[k.Value] = w.providers(v, full, kn.Line)
		}
	}
	return out
}

// provider decodes one cascade entry and fills the keys it omits with the
// defaults of its type.
func (w *walker) provider(n *yaml.Node, key string) Provider {
	var p Provider
	fields := providerFields(&p)
	fields[len(fields)-1].sub = w.price(&p.PricePerMTok)
	set := w.mapping(n, key, fields)
	d := Provider{Type: p.Type}.WithDefaults()
	defaults := providerFields(&d)
	for i, f := range fields {
		if set[f.key] {
			continue
		}
		switch dst := f.ptr.(type) {
		case *string:
			*dst = *defaults[i].ptr.(*string)
		case *int:
			*dst = *defaults[i].ptr.(*int)
		case *float64:
			*dst = *defaults[i].ptr.(*float64)
		case *Duration:
			*dst = *defaults[i].ptr.(*Duration)
		case *Window:
			*dst = *defaults[i].ptr.(*Window)
		}
	}
	return p
}

// mapping walks the pairs of a mapping node against fields and reports
// which keys were set to a non-null value that decoded.
func (w *walker) mapping(n *yaml.Node, path string, fields []field) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := resolve(kn)
		if k.Kind != yaml.ScalarNode {
			w.errorf(kn.Line, path, "keys must be plain strings, found %s", describe(k))
			continue
		}
		name := k.Value
		full := joinKey(path, name)
		if first, dup := seen[name]; dup {
			w.errorf(kn.Line, full, "duplicate key (first set at line %d)", first)
			continue
		}
		seen[name] = kn.Line
		var f *field
		for j := range fields {
			if fields[j].key == name {
				f = &fields[j]
				break
			}
		}
		if f == nil {
			w.errorf(kn.Line, full, "%s", unknownKeyMsg(name, path, fields))
			continue
		}
		v := resolve(vn)
		if isNull(v) {
			continue
		}
		w.lines[full] = kn.Line
		if f.sub != nil {
			f.sub(v, full, kn.Line)
			set[name] = true
			continue
		}
		if w.scalar(v, full, kn.Line, f.ptr) {
			set[name] = true
		}
	}
	return set
}

// scalar decodes n into ptr, reporting a type error when it cannot.
func (w *walker) scalar(n *yaml.Node, key string, line int, ptr any) bool {
	var msg string
	switch p := ptr.(type) {
	case *string:
		*p, msg = decodeString(n)
	case *int:
		*p, msg = decodeInt(n)
	case *float64:
		*p, msg = decodeFloat(n)
	case *Duration:
		*p, msg = decodeDuration(n)
	case *Window:
		*p, msg = decodeWindow(n)
	case **bool:
		var b bool
		if b, msg = decodeBool(n); msg == "" {
			*p = &b
		}
	case *bool:
		*p, msg = decodeBool(n)
	default:
		panic(fmt.Sprintf("config: no decoder for %T", ptr))
	}
	if msg != "" {
		w.errorf(line, key, "%s", msg)
		return false
	}
	return true
}

// decodeString accepts any plain scalar and keeps its text as written, so
// `model: 4` is the string "4". Messages never quote the value: this decodes
// api_key_env too.
func decodeString(n *yaml.Node) (string, string) {
	if n.Kind != yaml.ScalarNode {
		return "", "expected a string, found " + describe(n)
	}
	switch tag := n.ShortTag(); tag {
	case "!!str", "!!int", "!!float", "!!bool", "!!timestamp":
		return n.Value, ""
	default:
		return "", "expected a string, found a value tagged " + tag
	}
}

func decodeBool(n *yaml.Node) (bool, string) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return false, "expected true or false, found " + describe(n)
	}
	var v bool
	if err := n.Decode(&v); err != nil {
		return false, "expected true or false, found " + describe(n)
	}
	return v, ""
}

var digitsRE = regexp.MustCompile(`^[-+]?[0-9_]+$`)

func decodeInt(n *yaml.Node) (int, string) {
	if n.Kind != yaml.ScalarNode {
		return 0, "expected an integer, found " + describe(n)
	}
	if n.ShortTag() != "!!int" {
		if digitsRE.MatchString(n.Value) {
			return 0, quote(n.Value) + " is out of range"
		}
		return 0, describe(n) + " is not an integer"
	}
	var v int
	if err := n.Decode(&v); err != nil {
		return 0, quote(n.Value) + " is out of range"
	}
	return v, ""
}

// decodeWindow reads a context window: an integer, or auto.
func decodeWindow(n *yaml.Node) (Window, string) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Value == "auto" {
		return WindowAuto, ""
	}
	v, msg := decodeInt(n)
	switch {
	case msg != "":
		msg += " (a number of tokens, or auto)"
	case v < 1: // checked here: -1 would otherwise read as WindowAuto
		msg = fmt.Sprintf("%d must be at least 1", v)
	}
	return Window(v), msg
}

func decodeFloat(n *yaml.Node) (float64, string) {
	if n.Kind != yaml.ScalarNode {
		return 0, "expected a number, found " + describe(n)
	}
	if t := n.ShortTag(); t != "!!float" && t != "!!int" {
		return 0, describe(n) + " is not a number"
	}
	var v float64
	if err := n.Decode(&v); err != nil {
		return 0, describe(n) + " is not a number"
	}
	return v, ""
}

func decodeDuration(n *yaml.Node) (Duration, string) {
	if n.Kind != yaml.ScalarNode {
		return 0, "expected a duration such as \"60s\", found " + describe(n)
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		return 0, n.Value + " is not a duration: write it with a unit, e.g. \"60s\", \"5m\", \"1h\""
	case "!!str":
		d, err := time.ParseDuration(n.Value)
		if err != nil {
			return 0, quote(n.Value) + " is not a duration (e.g. \"60s\", \"5m\", \"1h\")"
		}
		return Duration(d), ""
	default:
		return 0, describe(n) + " is not a duration (e.g. \"60s\", \"5m\", \"1h\")"
	}
}

// keyHome tells where a key belongs, for keys used at the wrong level.
var keyHome = func() map[string]string {
	m := map[string]string{}
	for _, f := range providerFields(new(Provider)) {
		m[f.key] = "a cascade provider"
	}
	for _, f := range compactionFields(new(Compaction)) {
		m[f.key] = "compaction"
	}
	m["mask"] = "compaction"
	for _, f := range maskFields(new(Mask)) {
		m[f.key] = "compaction.mask"
	}
	for _, f := range serveFields(new(Serve)) {
		m[f.key] = "serve"
	}
	m["notice"] = "serve"
	for _, k := range []string{"model", "encoding", "encoding_file", "encoding_pattern", "compaction", "redact_patterns", "cascade", "cascades", "serve", "hooks"} {
		m[k] = "the top level"
	}
	return m
}()

// unknownKeyMsg describes an unknown key, suggesting the closest known key
// of the same mapping, or where the key belongs if it is known elsewhere.
func unknownKeyMsg(name, path string, fields []field) string {
	if name == "<<" {
		return "merge keys (<<) are not supported"
	}
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	best, bestD := "", 1<<30
	for _, f := range fields {
		d := editDistance(norm(name), norm(f.key))
		if d < bestD {
			best, bestD = f.key, d
		}
	}
	limit := 1
	if len(best) > 4 {
		limit = 2
	}
	if bestD <= limit {
		return "unknown key; did you mean " + best + "?"
	}
	for _, f := range fields {
		if strings.HasPrefix(f.key, norm(name)+"_") {
			return "unknown key; did you mean " + f.key + "?"
		}
	}
	if home, ok := keyHome[norm(name)]; ok {
		here := "the top level"
		switch {
		case strings.HasPrefix(path, "cascade[") || strings.HasPrefix(path, "cascades."):
			here = "a cascade provider"
		case path == "compaction":
			here = "compaction"
		case path == "serve":
			here = "serve"
		}
		if home != here {
			where := map[string]string{
				"compaction":         "belongs under compaction",
				"a cascade provider": "belongs to a cascade provider",
				"the top level":      "belongs at the top level",
				"serve":              "belongs under serve",
			}[home]
			return "unknown key; " + norm(name) + " " + where
		}
	}
	return "unknown key"
}

// editDistance is the optimal string alignment distance (Levenshtein plus
// adjacent transpositions), in bytes.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
