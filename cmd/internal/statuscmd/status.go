// Package statuscmd implements `drama status`.
package statuscmd

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/internal/httpsafe"
)

// Options are the inputs of `drama status`.
type Options struct {
	F       *cmdutil.Factory
	Timeout time.Duration
	// Now is the clock uptimes are measured against; tests replace it.
	Now func() time.Time
}

// NewCmd returns `drama status`. runF, if not nil, replaces the run (tests).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f, Now: time.Now}
	cmd := &cobra.Command{
		Use:        "status",
		Aliases:    []string{"ps"},
		SuggestFor: []string{"top", "running"},
		Short:      "Show the drama serve processes running on the root",
		Long: strings.TrimSpace(`
Show each drama serve running on the root, from the records it keeps in
<root>/run: address, pid, variant, engine plugin and the native engine's
pid when known, whether it is ready (and if not, why: the phase and
message of GET /ready), each engine it runs and whether that engine is
loaded (drama serve --keep-alive unloads an idle engine; the next request
loads it), the queue depth (drama_queue_depth of GET /metrics), uptime, and
its log files: drama serve's --log-file and each engine's native log.

Each server is asked over loopback, each question bounded by --timeout; a
server that does not answer is listed with the error. Records of processes
that are gone are skipped.

` + cmdutil.APIKeyHelp + `
GET /metrics (the queue depth) needs a key of scope admin; without it the
queue is shown as - with a warning.`),
		Example: strings.TrimSpace(`
$ drama status
$ drama status --json`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Timeout <= 0 {
				return cmdutil.FlagErrorf("--timeout must be more than 0")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 2*time.Second, "how long to wait for each server's answer")
	return cmd
}

// Report is the JSON document of `drama status --json`.
type Report struct {
	Root    string   `json:"root"`
	Servers []Server `json:"servers"`
}

// Server is what one drama serve says of itself.
type Server struct {
	PID        int       `json:"pid"`
	Addr       string    `json:"addr"`
	Variant    string    `json:"variant"`
	Engine     string    `json:"engine,omitempty"`
	EnginePID  int       `json:"engine_pid,omitempty"`
	Ready      bool      `json:"ready"`
	Phase      string    `json:"phase,omitempty"`
	Progress   float64   `json:"progress,omitempty"`
	Message    string    `json:"message,omitempty"`
	QueueDepth *int      `json:"queue_depth"`
	Started    time.Time `json:"started"`
	UptimeSec  int64     `json:"uptime_seconds"`
	LogFile    string    `json:"log_file,omitempty"`
	// EngineLog is the first engine's log; each engine's is under Engines.
	EngineLog string `json:"engine_log,omitempty"`
	// KeepAlive is the server's --keep-alive ("forever" or a duration).
	KeepAlive string `json:"keep_alive,omitempty"`
	// Engines are the engines the server runs, one or more.
	Engines []Engine `json:"engines"`
	// Error says why the server could not be asked.
	Error string `json:"error,omitempty"`
	// metricsRefused, when set, is the warning for a GET /metrics that
	// needed an API key.
	metricsRefused string
}

// Engine is one engine of a drama serve, from its GET /ready.
type Engine struct {
	Name string `json:"name"`
	// State is loaded, unloaded (stopped for idleness: the next request
	// loads it), failed, or the phase of a start under way (loading,
	// restarting, unloading...).
	State   string `json:"state"`
	Loaded  bool   `json:"loaded"`
	Ready   bool   `json:"ready"`
	Phase   string `json:"phase,omitempty"`
	Message string `json:"message,omitempty"`
	PID     int    `json:"pid,omitempty"` // the native engine's pid, when known
	// Log is the native engine's log, from the server's record.
	Log string `json:"log,omitempty"`
}

// readyBody is what drama serve's GET /ready answers: its engines' state as
// one, and each engine's under per_engine. Loaded is absent from a drama
// serve older than --keep-alive, whose engine is loaded whenever it is
// ready; per_engine from one older than the engine pool.
type readyBody struct {
	Phase     string  `json:"phase"`
	Progress  float64 `json:"progress"`
	Message   string  `json:"message"`
	Ready     bool    `json:"ready"`
	Loaded    *bool   `json:"loaded"`
	PerEngine []struct {
		Name    string `json:"name"`
		Phase   string `json:"phase"`
		Message string `json:"message"`
		Ready   bool   `json:"ready"`
		Loaded  *bool  `json:"loaded"`
	} `json:"per_engine"`
}

// engines lists a server's engines from its GET /ready: per_engine, else
// the one engine it reports, under the record's plugin name.
func (b readyBody) engines(name string) []Engine {
	if len(b.PerEngine) == 0 {
		return []Engine{newEngine(cmp.Or(name, "engine"), b.Phase, b.Message, b.Ready, b.Loaded)}
	}
	out := make([]Engine, 0, len(b.PerEngine))
	for _, e := range b.PerEngine {
		out = append(out, newEngine(e.Name, e.Phase, e.Message, e.Ready, e.Loaded))
	}
	return out
}

// enginePIDs gives each loaded engine of s its native engine's pid, from
// the runtime file in the engine's own directory (drama serve --gpus,
// --engines-per-gpu) or, for a server's only engine, the one in the
// runtime directory; s.EnginePID is a server's only engine's pid.
func enginePIDs(root string, rec serverec.Record, s *Server) {
	for i, e := range s.Engines {
		if !e.Loaded {
			continue
		}
		pid := serverec.EnginePIDOf(root, rec, e.Name)
		if pid == 0 && len(s.Engines) == 1 {
			pid = s.EnginePID
		}
		s.Engines[i].PID = pid
	}
	if s.EnginePID == 0 && len(s.Engines) == 1 {
		s.EnginePID = s.Engines[0].PID
	}
}

// recordEngines lists the engines of a server that could not be asked,
// from its record: each name and log, in state unknown, so that the logs
// of a server that does not answer are still at hand.
func recordEngines(rec serverec.Record) []Engine {
	out := []Engine{}
	for _, e := range rec.EngineLogs() {
		out = append(out, Engine{Name: cmp.Or(e.Name, rec.Engine, "engine"), State: "unknown", Log: e.Log})
	}
	return out
}

// engineLogsOf gives each engine its log from the record, by name; a
// record of one engine gives it to a server's only engine whatever the
// names (a drama serve older than named engines records no name, and
// its /ready names none).
func engineLogsOf(rec serverec.Record, engines []Engine) {
	logs := rec.EngineLogs()
	if len(logs) == 1 && len(engines) == 1 {
		engines[0].Log = logs[0].Log
		return
	}
	for i, e := range engines {
		for _, l := range logs {
			if l.Name == e.Name {
				engines[i].Log = l.Log
			}
		}
	}
}

// engineLogs are the logs of s's engines, else its EngineLog.
func engineLogs(s Server) []string {
	var out []string
	for _, e := range s.Engines {
		if e.Log != "" {
			out = append(out, e.Log)
		}
	}
	if len(out) == 0 && s.EngineLog != "" {
		out = append(out, s.EngineLog)
	}
	return out
}

func newEngine(name, phase, msg string, ready bool, loaded *bool) Engine {
	e := Engine{Name: name, Phase: phase, Message: msg, Ready: ready}
	if loaded != nil {
		e.Loaded = *loaded
	} else {
		e.Loaded = ready && phase == "ready"
	}
	switch {
	case e.Loaded:
		e.State = "loaded"
	case phase == "":
		e.State = "unknown"
	default:
		e.State = phase
	}
	return e
}

func run(ctx context.Context, opts *Options) error {
	f := opts.F
	root, err := f.Root()
	if err != nil {
		return err
	}
	recs, err := serverec.List(root)
	if err != nil {
		return err
	}
	rep := Report{Root: root, Servers: make([]Server, len(recs))}
	q := &asker{client: &http.Client{Timeout: opts.Timeout, CheckRedirect: httpsafe.CheckRedirect}, key: f.APIKey()}
	var wg sync.WaitGroup
	for i, rec := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Servers[i] = q.ask(ctx, root, rec, opts.Now())
		}()
	}
	wg.Wait()
	for _, s := range rep.Servers {
		if s.metricsRefused != "" {
			f.Warnf("%s", s.metricsRefused)
		}
	}
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, rep)
	}
	if len(recs) == 0 {
		f.Infof("no drama serve runs on %s", root)
		return nil
	}
	t := cmdutil.NewTable(f.IO, "addr", "pid", "variant", "engine", "engine pid", "state", "engines", "queue", "uptime", "logs")
	for _, s := range rep.Servers {
		epid, queue := "-", "-"
		if s.EnginePID > 0 {
			epid = strconv.Itoa(s.EnginePID)
		}
		if s.QueueDepth != nil {
			queue = strconv.Itoa(*s.QueueDepth)
		}
		logs := strings.Join(nonEmpty(append([]string{s.LogFile}, engineLogs(s)...)...), ",")
		if logs == "" {
			logs = "-"
		}
		t.AddRow(s.Addr, strconv.Itoa(s.PID), s.Variant, orDash(s.Engine), epid, state(s), engines(s), queue,
			(time.Duration(s.UptimeSec) * time.Second).String(), logs)
	}
	return t.Render()
}

// asker asks drama serve processes, with the API key when one is set.
type asker struct {
	client *http.Client
	key    string
}

func (q *asker) ask(ctx context.Context, root string, rec serverec.Record, now time.Time) Server {
	s := Server{PID: rec.PID, Addr: rec.Addr, Variant: rec.Variant, Engine: rec.Engine, Started: rec.Started,
		LogFile: rec.LogFile, EngineLog: rec.EngineLog, EnginePID: serverec.EnginePID(root, rec), KeepAlive: rec.KeepAlive,
		Engines: []Engine{}}
	if !rec.Started.IsZero() {
		s.UptimeSec = int64(now.Sub(rec.Started) / time.Second)
	}
	base := "http://" + loopback(rec.Addr)
	var st readyBody
	body, code, _, err := q.get(ctx, base+"/ready")
	if err == nil {
		if advice := cmdutil.AuthAdvice(code, "", q.key != ""); advice != "" {
			err = fmt.Errorf("GET /ready: status %d: %s", code, advice)
		} else if jerr := json.Unmarshal(body, &st); jerr != nil {
			err = fmt.Errorf("GET /ready: status %d, not drama serve's answer: %v", code, jerr)
		}
	}
	if err != nil {
		s.Error = err.Error()
		s.Engines = recordEngines(rec)
		return s
	}
	s.Ready, s.Phase, s.Progress, s.Message = st.Ready && code == http.StatusOK, st.Phase, st.Progress, st.Message
	s.Engines = st.engines(rec.Engine)
	enginePIDs(root, rec, &s)
	engineLogsOf(rec, s.Engines)
	body, code, challenge, err := q.get(ctx, base+"/metrics")
	switch {
	case err == nil && code == http.StatusOK:
		if n, ok := gauge(body, "drama_queue_depth"); ok {
			s.QueueDepth = &n
		}
	case err == nil:
		if advice := cmdutil.AuthAdvice(code, cmdutil.ChallengeScope(challenge, "admin"), q.key != ""); advice != "" {
			s.metricsRefused = fmt.Sprintf("drama serve at %s answered %d to GET /metrics, so its queue depth is not shown: %s", rec.Addr, code, advice)
		}
	}
	return s
}

// get returns the body, status and WWW-Authenticate challenge of a GET.
func (q *asker) get(ctx context.Context, url string) ([]byte, int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, "", err
	}
	cmdutil.SetAPIKey(req, q.key)
	resp, err := q.client.Do(req)
	if err != nil {
		return nil, 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return b, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), err
}

// gauge reads an unlabelled metric's value from Prometheus text.
func gauge(body []byte, name string) (int, bool) {
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == name {
			v, err := strconv.ParseFloat(fields[1], 64)
			return int(v), err == nil
		}
	}
	return 0, false
}

// loopback turns a wildcard listen address into one this host can dial.
func loopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

func state(s Server) string {
	switch {
	case s.Error != "":
		return "unreachable: " + s.Error
	case s.Ready && (s.Phase == "ready" || s.Phase == ""):
		return "ready"
	case s.Ready:
		return "ready (" + s.Phase + ")" // unloaded or loading on demand: a request is taken and waits
	}
	st := s.Phase
	if s.Progress > 0 {
		st += fmt.Sprintf(" %.0f%%", s.Progress*100)
	}
	if s.Message != "" {
		st += ": " + s.Message
	}
	return st
}

// engines is the engines column: each engine's name and state.
func engines(s Server) string {
	if len(s.Engines) == 0 {
		return "-"
	}
	parts := make([]string, len(s.Engines))
	for i, e := range s.Engines {
		parts[i] = e.Name + " " + e.State
	}
	return strings.Join(parts, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
