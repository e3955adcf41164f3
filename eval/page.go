package eval

import (
	"fmt"
	"html/template"
	"io"
	"strings"
)

// Page writes res as one HTML page with nothing to fetch: a bar chart of recall by probe kind,
// each configuration's compacted context beside its baseline (the full history cut to the same
// limit), then the table's figures.
func Page(w io.Writer, res Result) error {
	return pageTemplate.Execute(w, pageOf(res))
}

// Chart geometry, in SVG user units.
const (
	barWidth  = 320 // the length of a bar of recall 1
	barHeight = 12
	labelLeft = 150 // where the bars start
	rowGap    = 6
)

type pageData struct {
	Result
	Kinds  []string
	Groups []chartGroup
	Height int
	Width  int
}

// chartGroup is a probe kind's bars: one per configuration and its baseline.
type chartGroup struct {
	Title string
	Y     int
	Bars  []chartBar
}

type chartBar struct {
	Label        string
	Y            int
	Len, BaseLen int
	Recall, Base float64
	N            int
}

func pageOf(res Result) pageData {
	d := pageData{Result: res, Kinds: append(append([]string(nil), ProbeKinds...), "all"), Width: labelLeft + barWidth + 120}
	y := 0
	for _, k := range d.Kinds {
		g := chartGroup{Title: strings.ToUpper(k[:1]) + k[1:], Y: y + 14}
		y += 22
		for _, c := range res.Configs {
			n := c.Counts[k]
			if k == "all" {
				n = c.Asked
			}
			if n == 0 {
				continue
			}
			g.Bars = append(g.Bars, chartBar{Label: c.Name, Y: y, N: n, Recall: c.Recall[k], Base: c.Baseline[k],
				Len: int(c.Recall[k]*barWidth + 0.5), BaseLen: int(c.Baseline[k]*barWidth + 0.5)})
			y += 2*barHeight + rowGap
		}
		if len(g.Bars) > 0 {
			d.Groups = append(d.Groups, g)
		} else {
			y -= 22
		}
		y += 8
	}
	d.Height = y
	return d
}

var pageTemplate = template.Must(template.New("eval").Funcs(template.FuncMap{
	"add":   func(a, b int) int { return a + b },
	"pct":   func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"upper": strings.ToUpper,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>memctl eval</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-top:1.5em}td,th{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:right}
th:first-child,td:first-child{text-align:left}.c{fill:#2b6cb0}.b{fill:#cbd5e0}text{font-size:11px}
</style></head><body>
<h1>What compaction keeps</h1>
<p>{{.Messages}} messages replayed under {{len .Configs}} configuration(s); recall is the share of probes answered right
with the compacted context (dark) and with the newest messages that fit the same limit (light).{{if .Interrupted}}
<strong>Interrupted: what was measured so far.</strong>{{end}}</p>
<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="recall by probe kind and configuration">
{{- range .Groups}}
<text x="0" y="{{.Y}}" font-weight="bold">{{.Title}}</text>
{{- range .Bars}}
<text x="0" y="{{add .Y 10}}">{{.Label}} ({{.N}})</text>
<rect class="c" x="150" y="{{.Y}}" width="{{.Len}}" height="12"><title>{{.Label}}: {{pct .Recall}}</title></rect>
<text x="{{add 154 .Len}}" y="{{add .Y 10}}">{{pct .Recall}}</text>
<rect class="b" x="150" y="{{add .Y 12}}" width="{{.BaseLen}}" height="12"><title>{{.Label}} baseline: {{pct .Base}}</title></rect>
<text x="{{add 154 .BaseLen}}" y="{{add .Y 22}}">{{pct .Base}}</text>
{{- end}}
{{- end}}
</svg>
<table><tr><th>Config</th><th>Limit</th><th>Probes</th>{{range .Kinds}}<th>{{upper .}}</th>{{end}}<th>Baseline</th><th>Present</th><th>Cut</th><th>Tokens</th><th>Base tokens</th><th>Requests</th><th>Summarizer ms</th></tr>
{{- range $c := .Configs}}
<tr><td>{{$c.Name}}</td><td>{{$c.TokenLimit}}</td><td>{{$c.Asked}}</td>{{range $.Kinds}}<td>{{pct (index $c.Recall .)}}</td>{{end}}<td>{{pct (index $c.Baseline "all")}}</td><td>{{pct $c.Present}}</td><td>{{$c.Cut}}</td><td>{{$c.TokensSent}}</td><td>{{$c.BaselineTokens}}</td><td>{{$c.Requests}}</td><td>{{$c.SummarizerMs}}</td></tr>
{{- end}}
</table>
</body></html>
`))
