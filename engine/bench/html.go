package bench

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot ids in the HTML report, one <svg> each inside a <figure> of that id.
const (
	PlotFirstAudio = "plot-first-audio"
	PlotRTF        = "plot-rtf"
	PlotMemory     = "plot-memory"
)

var (
	colWhole    = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colStreamed = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colGate     = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colOther    = []color.Color{color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}}
)

// WriteHTML writes the report as one self-contained HTML page: the summary
// table and three plots (warm streamed first audio as a histogram, warm
// median RTF per text for both modes, memory over time) drawn as inline
// SVG. It loads nothing: no script, style sheet or font from elsewhere.
func (r *Report) WriteHTML(w io.Writer) error {
	plots := []struct {
		ID, Title string
		make      func() (*plot.Plot, error)
	}{
		{PlotFirstAudio, "Warm streamed first audio", r.firstAudioPlot},
		{PlotRTF, "Warm real-time factor per text (median)", r.rtfPlot},
		{PlotMemory, "Memory over the run", r.memoryPlot},
	}
	type fig struct {
		ID, Title string
		SVG       template.HTML
		Missing   string
	}
	var figs []fig
	for _, p := range plots {
		pl, err := p.make()
		if err != nil {
			figs = append(figs, fig{ID: p.ID, Title: p.Title, Missing: err.Error()})
			continue
		}
		svg, err := renderSVG(pl, 7.5*vg.Inch, 3.6*vg.Inch)
		if err != nil {
			return fmt.Errorf("bench: plot %s: %w", p.ID, err)
		}
		figs = append(figs, fig{ID: p.ID, Title: p.Title, SVG: template.HTML(svg)})
	}
	return htmlPage.Execute(w, map[string]any{"R": r, "Figs": figs, "Rows": r.SummaryRows(), "WER": r.WERRows(), "Heard": r.heard()})
}

// heard returns, by text id, what the transcriber heard in the first warm
// whole reply of the text transcribed (in the first voice).
func (r *Report) heard() map[string]string {
	out := map[string]string{}
	for _, q := range r.Requests {
		if _, ok := out[q.TextID]; !ok && q.Transcript != nil && q.Pass == "warm" && q.Mode == Whole {
			out[q.TextID] = *q.Transcript
		}
	}
	return out
}

func renderSVG(p *plot.Plot, w, h vg.Length) (string, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:] // drop the XML prolog and comment: inline SVG needs neither
	}
	return s, nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

func (r *Report) warm(mode string) []Request {
	var out []Request
	for _, q := range r.Requests {
		if q.Pass == "warm" && q.Mode == mode && q.Valid() {
			out = append(out, q)
		}
	}
	return out
}

func (r *Report) firstAudioPlot() (*plot.Plot, error) {
	var vs plotter.Values
	for _, q := range r.warm(Streamed) {
		vs = append(vs, q.FirstAudio)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("no warm streamed replies")
	}
	p := newPlot("", "first audio (s)", "requests")
	bins := max(5, min(30, len(vs)/3))
	h, err := plotter.NewHist(vs, bins)
	if err != nil {
		return nil, err
	}
	h.FillColor = colStreamed
	p.Add(h)
	return p, nil
}

func (r *Report) rtfPlot() (*plot.Plot, error) {
	var names []string
	for _, t := range r.Corpus.Texts {
		names = append(names, t.ID)
	}
	p := newPlot("", "text", "real-time factor")
	w := vg.Points(max(2, 180/float64(max(1, len(names)))))
	any, top := false, 1.0
	for i, m := range []struct {
		mode string
		col  color.Color
	}{{Whole, colWhole}, {Streamed, colStreamed}} {
		per := map[string][]float64{}
		for _, q := range r.warm(m.mode) {
			per[q.TextID] = append(per[q.TextID], q.RTF)
		}
		vs := make(plotter.Values, len(names))
		for k, id := range names {
			if xs := per[id]; len(xs) > 0 {
				vs[k] = Percentile(xs, 50)
				any, top = true, max(top, vs[k])
			}
		}
		bars, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return nil, err
		}
		bars.Color, bars.LineStyle.Width = m.col, 0
		bars.Offset = w * vg.Length(float64(i)-0.5)
		p.Add(bars)
		p.Legend.Add(m.mode, bars)
	}
	if !any {
		return nil, fmt.Errorf("no warm replies")
	}
	gate := plotter.NewFunction(func(float64) float64 { return 1 })
	gate.Color, gate.Dashes = colGate, []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(gate)
	p.Legend.Add("real time (1.0)", gate)
	p.Legend.Top = true
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.75, float64(len(names))-0.25
	p.Y.Min, p.Y.Max = 0, top*1.3 // room for the legend above the bars
	p.X.Tick.Label.Rotation = math.Pi / 2
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	return p, nil
}

func (r *Report) memoryPlot() (*plot.Plot, error) {
	if len(r.Memory.Samples) == 0 {
		return nil, fmt.Errorf("no memory samples")
	}
	p := newPlot("", "seconds into the run", "GiB")
	series := []struct {
		name string
		get  func(MemSample) int64
		col  color.Color
	}{
		{"MemAvailable drop", func(s MemSample) int64 { return s.AvailableDrop }, colWhole},
		{"process tree RSS", func(s MemSample) int64 { return s.RSS }, colStreamed},
		{"cgroup peak", func(s MemSample) int64 { return s.CgroupPeak }, colOther[0]},
		{"GPU used (nvidia-smi)", func(s MemSample) int64 { return s.GPUUsed }, colOther[1]},
	}
	drawn := 0
	for _, s := range series {
		var xys plotter.XYs
		for _, m := range r.Memory.Samples {
			if v := s.get(m); v >= 0 {
				xys = append(xys, plotter.XY{X: m.T, Y: float64(s.get(m)) / (1 << 30)})
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = s.col, vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.name, l)
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("no memory figures on this host")
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p, nil
}

// SummaryRow is one line of the summary table.
type SummaryRow struct {
	Mode, Group, Figure string
	N                   int
	P50, P95, P99       float64
}

// SummaryRows lists the summary as table rows: per mode, all requests,
// then by length class, then by voice.
func (r *Report) SummaryRows() []SummaryRow {
	var rows []SummaryRow
	add := func(mode, group string, f *Figures) {
		for _, d := range []struct {
			name string
			d    *Dist
		}{{"first_audio_s", f.FirstAudio}, {"total_s", f.Total}, {"rtf", f.RTF}} {
			if d.d != nil {
				rows = append(rows, SummaryRow{mode, group, d.name, d.d.N, d.d.P50, d.d.P95, d.d.P99})
			}
		}
	}
	for _, mode := range r.Schedule.Modes {
		m := r.Mode(mode)
		add(mode, "all", &m.All)
		for _, c := range []string{Short, Medium, Long} {
			if f := m.ByClass[c]; f != nil {
				add(mode, c, f)
			}
		}
		var vs []string
		for v := range m.ByVoice {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		if len(vs) > 1 {
			for _, v := range vs {
				add(mode, "voice "+v, m.ByVoice[v])
			}
		}
	}
	return rows
}

func gib(b int64) string {
	if b < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
}

var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"gib":    gib,
	"f3":     func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"pct":    Percent,
	"textID": func(group string) string { id, _ := strings.CutPrefix(group, "text "); return id },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>drama bench: {{.R.Host.Name}} {{.R.Started.Format "2006-01-02 15:04"}}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 60em; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th:first-child, td:first-child, td:nth-child(2), td:nth-child(3) { text-align: left; }
figure { margin: 1.5em 0; }
figure svg { width: 100%; height: auto; }
.bad { color: #b00; font-weight: bold; }
</style>
</head>
<body>
<h1>drama bench</h1>
<p>{{.R.Started.Format "2006-01-02 15:04:05 MST"}} on <b>{{.R.Host.Name}}</b> ({{.R.Host.OS}}/{{.R.Host.Arch}}, {{.R.Host.CPUs}} CPUs{{if .R.Host.GPU}}, {{.R.Host.GPU}}{{end}}),
server {{.R.Server}}{{if .R.Model}}, model {{.R.Model}}{{end}}{{if .R.ReadySeconds}}, ready {{f3 .R.ReadySeconds}} s after start{{end}}.</p>
<p>Corpus {{.R.Corpus.Name}} ({{len .R.Corpus.Texts}} texts, sha256 <code>{{.R.Corpus.SHA256}}</code>); one cold request,
{{.R.Schedule.Warmup}} warm-up and {{.R.Schedule.Passes}} warm passes, whole replies then streamed; {{len .R.Requests}} requests in {{f3 .R.Duration}} s.
{{if .R.Summary.Invalid}}<span class="bad">{{.R.Summary.Invalid}} replies were not valid audio.</span>{{else}}Every reply was valid audio.{{end}}</p>
<h2>Warm figures</h2>
<table>
<tr><th>mode</th><th>group</th><th>figure</th><th>n</th><th>p50</th><th>p95</th><th>p99</th></tr>
{{range .Rows}}<tr><td>{{.Mode}}</td><td>{{.Group}}</td><td>{{.Figure}}</td><td>{{.N}}</td><td>{{f3 .P50}}</td><td>{{f3 .P95}}</td><td>{{f3 .P99}}</td></tr>
{{end}}</table>
{{with .R.Summary.WER}}<h2 id="wer">Word error rate</h2>
<p>Each warm whole reply transcribed by {{.Transcriber}}: <b>{{pct .All.Rate}}</b> ({{.All.Errors}} errors in {{.All.Words}} words of {{.All.Replies}} replies).
Words are compared after normalisation: case, punctuation and point tags such as [laughs] removed, numbers as written.
{{if .Untranscribed}}<span class="bad">{{.Untranscribed}} replies were not transcribed (the server answered an error) and are left out.</span>{{end}}</p>
<table>
<tr><th>group</th><th>replies</th><th>words</th><th>errors</th><th>wer</th><th style="text-align:left">heard (first warm pass)</th></tr>
{{range $.WER}}<tr><td>{{.Group}}</td><td>{{.Replies}}</td><td>{{.Words}}</td><td>{{.Errors}}</td><td>{{pct .Rate}}</td><td style="text-align:left">{{index $.Heard (textID .Group)}}</td></tr>
{{end}}</table>
{{end}}<h2>Memory</h2>
<p>Peak: MemAvailable drop {{gib .R.Memory.Peak.AvailableDrop}} (from {{if .R.Memory.Baseline.BeforeLoad}}before the load{{else}}the start of the run{{end}}),
cgroup {{gib .R.Memory.Peak.CgroupPeak}}, GPU used {{gib .R.Memory.Peak.GPUUsed}}, process tree RSS {{gib .R.Memory.Peak.RSS}}; {{len .R.Memory.Samples}} samples every 0.5 s.</p>
{{range .Figs}}<figure id="{{.ID}}">
<figcaption>{{.Title}}</figcaption>
{{if .SVG}}{{.SVG}}{{else}}<p>Not drawn: {{.Missing}}.</p>{{end}}
</figure>
{{end}}
<h2>Texts</h2>
<table>
<tr><th>id</th><th>class</th><th style="text-align:left">text</th></tr>
{{range .R.Corpus.Texts}}<tr><td>{{.ID}}</td><td>{{.Class}}</td><td style="text-align:left">{{.Text}}</td></tr>
{{end}}</table>
</body>
</html>
`))
