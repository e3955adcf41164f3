package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
)

// Calibration bounds: the ratio of the upstream's prompt tokens to the local count of the
// same prompt is kept within them (a server that reports nonsense cannot shrink the budget to
// nothing nor grow it without bound).
const (
	MinTokenRatio = 0.5
	MaxTokenRatio = 3.0
)

// WindowLimit is the limit a thread is fitted in when its model's window is window tokens
// and the upstream counts ratio times what the thread's tokenizer counts: window / ratio,
// rounded down (compact.Window.Limit), and never more than window: an upstream whose usage
// counts less than the local count (one that leaves part of the prompt out of it) must not
// make the limit larger than the window it reports.
func WindowLimit(window int, ratio float64) int {
	return min(window, int(math.Floor(float64(window)/ratio)))
}

// assumedPrefix starts the source of a window the cascade assumed (cascade.Windows).
const assumedPrefix = "assumed ("

// calibration holds, per model, the ratio of the upstream's count of a prompt
// (usage.prompt_tokens) to the local count of what was sent.
type calibration struct {
	mu    sync.Mutex
	ratio map[string]float64
}

// Ratio returns the model's ratio, 1 when none was measured.
func (c *calibration) Ratio(model string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.ratio[model]; ok {
		return r
	}
	return 1
}

// record adds one measure: the upstream counted upstream tokens for a prompt of local tokens.
// The ratio follows the latest measures, and grows at once (a server that counts more refuses
// what does not fit).
func (c *calibration) record(model string, upstream, local int) (float64, bool) {
	if upstream <= 0 || local <= 0 {
		return 0, false
	}
	r := min(max(float64(upstream)/float64(local), MinTokenRatio), MaxTokenRatio)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ratio == nil {
		c.ratio = map[string]float64{}
	}
	if old, ok := c.ratio[model]; ok && r < old {
		r = (old + r) / 2
	}
	c.ratio[model] = r
	return r, true
}

// seed sets the model's ratio when none was measured yet.
func (c *calibration) seed(model string, r float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ratio == nil {
		c.ratio = map[string]float64{}
	}
	if _, ok := c.ratio[model]; !ok {
		c.ratio[model] = min(max(r, MinTokenRatio), MaxTokenRatio)
	}
}

// recordWindow stores on the thread the window it is fitted in when it changed (ts is what the
// thread has stored). With no window this turn (w nil), a recorded window the current rules
// refuse (windowRefused) is dropped: a record is kept only while it could be used. A failure
// costs the display only: it is logged.
func (s *Server) recordWindow(ctx context.Context, thread string, ts compact.ThreadSettings, w *compact.Window) {
	if w == nil {
		why := s.windowRefused(ts)
		if why == "" {
			return
		}
		s.Logger.Warn("the thread's recorded window is refused: dropped", "thread", thread, "why", why)
	} else if ts.Window != nil && *ts.Window == *w {
		return
	}
	ts.Window = w
	if err := compact.SaveThreadSettings(ctx, s.Store, thread, ts); err != nil {
		s.Logger.Warn("the thread's window was not recorded", "thread", thread, "error", err.Error())
	}
}

// windowProblem says why a recorded window is out of the ranges the proxy gives one ("" when it
// is within them, or there is none): a window of 1 to cascade.MaxWindow tokens, a ratio
// within MinTokenRatio and MaxTokenRatio, a limit of 1 to compact.MaxTokenLimit. A record an
// earlier version made, or a row edited by hand, may be out of them.
func windowProblem(w *compact.Window) string {
	switch {
	case w == nil:
		return ""
	case w.Tokens <= 0 || w.Tokens > cascade.MaxWindow:
		return fmt.Sprintf("window %d tokens is out of range (1 to %d)", w.Tokens, cascade.MaxWindow)
	case !(w.Ratio >= MinTokenRatio && w.Ratio <= MaxTokenRatio):
		return fmt.Sprintf("ratio %g is out of range (%g to %g)", w.Ratio, MinTokenRatio, MaxTokenRatio)
	case w.Limit <= 0 || w.Limit > compact.MaxTokenLimit:
		return fmt.Sprintf("limit %d tokens is out of range (1 to %d)", w.Limit, compact.MaxTokenLimit)
	}
	return ""
}

// windowRefused says why the thread's recorded window is refused by the current rules ("" when
// it is not, or there is none): out of range (windowProblem), or a limit that does not resolve
// with the thread's settings (memory.LimitOverride, as a pin is checked in it) while the
// thread's settings alone do.
func (s *Server) windowRefused(ts compact.ThreadSettings) string {
	if ts.Window == nil {
		return ""
	}
	if why := windowProblem(ts.Window); why != "" {
		return why
	}
	over := compact.LimitOverride(s.Compactor.Settings, ts, ts.Window.Limit)
	if _, err := compact.Resolve(s.Compactor.Settings, ts, over); err != nil {
		if _, alone := compact.Resolve(s.Compactor.Settings, ts, compact.ThreadSettings{}); alone == nil {
			return fmt.Sprintf("limit %d tokens: %v", ts.Window.Limit, err)
		}
	}
	return ""
}

// promptTokens reads usage.prompt_tokens of a chat completion, or of a stream chunk (0 when
// there is none).
func promptTokens(b []byte) int {
	var v struct {
		Usage *struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(b, &v) != nil || v.Usage == nil {
		return 0
	}
	return v.Usage.PromptTokens
}

// limits returns what a turn of a thread changes in its settings (the override given to the
// compactor): with Windows set (token_limit auto), a thread that sets no token_limit of its
// own is fitted in the window the upstream reports for the model, divided by the model's
// calibration ratio (seeded from the thread's record when this process has measured none);
// capped, when cap > 0, at cap (a compact-and-retry). The reserve is lowered to a quarter of a
// limit it would not leave room in. It also returns the window as the thread should record it
// (nil when the thread's limit is its own).
func (s *Server) limits(ctx context.Context, ts compact.ThreadSettings, model string, cap int) (compact.ThreadSettings, *compact.Window) {
	var over compact.ThreadSettings
	var served *compact.Window
	limit := compact.MaxTokenLimit // settings that do not resolve: the turn's measure says why
	if set, err := compact.Resolve(s.Compactor.Settings, ts, over); err == nil {
		limit = set.TokenLimit
	}
	if s.Windows != nil && ts.TokenLimit == nil {
		w := s.Windows.Window(ctx, model)
		rw := ts.Window
		if rw != nil && rw.Model == model && windowProblem(rw) == "" {
			s.calib.seed(model, rw.Ratio)
			if w.Assumed && !strings.HasPrefix(rw.Source, assumedPrefix) {
				// The window the thread learned (a refusal that named it) outlives a restart.
				s.Windows.Learn(model, rw.Tokens, rw.Source)
				w = cascade.ModelWindow{Tokens: rw.Tokens, Source: rw.Source}
			}
		}
		ratio := s.calib.Ratio(model)
		if w.Assumed {
			// A window assumed for an upstream that does not say never shrinks a thread: the
			// settings' limit applies until the upstream reports its window or refuses a prompt
			// naming it (see cascade.RefusalWindow), or refuses one as too long at all.
			served = &compact.Window{Model: model, Tokens: w.Tokens, Source: w.Source, Ratio: math.Round(ratio*100) / 100, Limit: limit}
		} else {
			limit = WindowLimit(w.Tokens, ratio)
			over.TokenLimit = &limit
			served = &compact.Window{Model: model, Tokens: w.Tokens, Source: w.Source, Ratio: math.Round(ratio*100) / 100, Limit: limit}
		}
	}
	if cap > 0 && cap < limit {
		limit = cap
		over.TokenLimit = &limit
	}
	if over.TokenLimit == nil {
		return over, served
	}
	return compact.LimitOverride(s.Compactor.Settings, ts, limit), served
}
