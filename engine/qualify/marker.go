package qualify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine/bench"
	"github.com/drama-tts/drama/pins"
)

// MarkerFormat is the format field of a marker.
const MarkerFormat = "drama-qualified/1"

// NumericsStatement is what an operator accepts with
// --accept-native-numerics.
const NumericsStatement = "the native engine's numerics are not bit-exact with the reference implementation; its output was accepted for this host"

// Marker records a passing qualification run.
type Marker struct {
	Format             string   `json:"format"`
	Qualified          bool     `json:"qualified"`
	Variant            string   `json:"variant"`
	Host               string   `json:"host"`
	GPU                string   `json:"gpu"`
	PinsSHA256         string   `json:"pins_sha256"`
	NativeSHA256       string   `json:"native_sha256"`
	UpstreamCommit     string   `json:"upstream_commit,omitempty"`
	CheckpointRevision string   `json:"checkpoint_revision"`
	Numerics           Numerics `json:"numerics"`
	Bench              Figures  `json:"bench"`
	// Intelligibility is the word error rate the run measured, or that it
	// measured none; a marker written before it was recorded reads as not
	// checked.
	Intelligibility Intelligibility `json:"intelligibility"`
	QualifiedAt     time.Time       `json:"qualified_at"`
	DramaVersion    string          `json:"drama_version,omitempty"`
}

// Numerics records the operator's acceptance of the native numerics.
type Numerics struct {
	Accepted   bool      `json:"accepted"`
	Statement  string    `json:"statement"`
	AcceptedAt time.Time `json:"accepted_at"`
}

// Figures are the benchmark's gated figures as the marker keeps them.
type Figures struct {
	FirstAudioP50  float64 `json:"first_audio_p50_s"`
	RTFWholeP50    float64 `json:"rtf_whole_p50"`
	RTFStreamedP50 float64 `json:"rtf_streamed_p50"`
	PeakBytes      int64   `json:"peak_bytes"`
	BookedBytes    int64   `json:"booked_bytes"`
	ReadySeconds   float64 `json:"ready_s"`
	Report         string  `json:"report,omitempty"` // the report.json of the run
}

// NotChecked is how a marker without a word error rate describes the
// intelligibility of its run.
const NotChecked = "intelligibility not checked"

// Intelligibility is whether a transcriber heard the run's warm whole
// replies say their texts, and how well.
type Intelligibility struct {
	// Checked is true when a transcriber heard the replies; the figures
	// below are set only then.
	Checked bool `json:"checked"`
	// WER is the word error rate over all warm whole replies (0.0131 is
	// 1.31 %): Errors over Words; GateWER the gate it met.
	WER         *float64 `json:"wer,omitempty"`
	Words       int      `json:"words,omitempty"`
	Errors      int      `json:"errors,omitempty"`
	GateWER     float64  `json:"gate_wer,omitempty"`
	Transcriber string   `json:"transcriber,omitempty"`
	// Summary says it in words: "word error rate 1.31 % (...)", or
	// NotChecked with what to give.
	Summary string `json:"summary"`
}

// IntelligibilityOf records the word error rate of a report gated at gate;
// a report without one (no transcriber) gives a record that says it was
// not checked.
func IntelligibilityOf(r *bench.Report, gate float64) Intelligibility {
	w := r.Summary.WER
	if w == nil {
		return Intelligibility{Summary: NotChecked + ": no transcriber heard the replies (drama qualify --transcribe-url)"}
	}
	rate := w.All.Rate
	return Intelligibility{Checked: true, WER: &rate, Words: w.All.Words, Errors: w.All.Errors, GateWER: gate, Transcriber: w.Transcriber,
		Summary: fmt.Sprintf("word error rate %s (%d errors in %d words of the warm whole replies) within the gate %s", bench.Percent(rate), w.All.Errors, w.All.Words, bench.Percent(gate))}
}

// Short says the intelligibility in a few words, for a listing: "word
// error rate 1.31 %" or NotChecked.
func (i Intelligibility) Short() string {
	if !i.Checked || i.WER == nil {
		return NotChecked
	}
	return "word error rate " + bench.Percent(*i.WER)
}

// Binding is what a marker is bound to.
type Binding struct {
	Variant      string `json:"variant"`
	Host         string `json:"host"`
	PinsSHA256   string `json:"pins_sha256"`
	NativeSHA256 string `json:"native_sha256"`
}

// Binding returns the marker's binding.
func (m *Marker) Binding() Binding {
	return Binding{Variant: m.Variant, Host: m.Host, PinsSHA256: m.PinsSHA256, NativeSHA256: m.NativeSHA256}
}

// Path returns where the marker of a variant lives under root.
func Path(root, variant string) string {
	return filepath.Join(root, pins.StateDirName, "qualified-"+variant+".json")
}

// PinsSHA256 returns the sha256 of the pins' canonical JSON.
func PinsSHA256(p *pins.Pins) (string, error) {
	data, err := p.Marshal()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// HostID names this host for a marker: its hostname and, where the OS
// keeps one, the start of its machine id, so a renamed or cloned machine
// is another host.
func HostID() string {
	name, _ := os.Hostname()
	for _, f := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		if b, err := os.ReadFile(f); err == nil {
			if id := strings.TrimSpace(string(b)); len(id) >= 12 {
				return name + "/" + id[:12]
			}
		}
	}
	return name
}

// ErrBadMarker is wrapped by Read's error for a marker that is there but
// cannot be used; another qualification writes a good one.
var ErrBadMarker = errors.New("bad marker")

// Read reads the marker of a variant; an error wrapping fs.ErrNotExist
// when there is none, ErrBadMarker when it cannot be used.
func Read(root, variant string) (*Marker, error) {
	name := Path(root, variant)
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("qualify: marker: %w", err)
	}
	var m Marker
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("qualify: marker %s: %w: %v", name, ErrBadMarker, err)
	}
	if m.Format != MarkerFormat {
		return nil, fmt.Errorf("qualify: marker %s: %w: format %q: want %q", name, ErrBadMarker, m.Format, MarkerFormat)
	}
	return &m, nil
}

// Write writes m as the marker of its variant: a temporary file beside it,
// synced and renamed. It refuses a marker that is not qualified or whose
// numerics were not accepted.
func Write(root string, m *Marker) error {
	if !m.Qualified || !m.Numerics.Accepted {
		return errors.New("qualify: a marker is written only for a qualified run whose native numerics were accepted")
	}
	m.Format = MarkerFormat
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	name := Path(root, m.Variant)
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("qualify: marker: %w", err)
	}
	if err := atomicfile.WriteFile(name, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("qualify: marker %s: %w", name, err)
	}
	return nil
}

// States of a host for a variant.
const (
	Qualified   = "qualified"
	Unqualified = "unqualified" // no marker, or a marker of a failed run
	Stale       = "stale"       // a marker bound to other pins, engine or host
)

// NoMarker is the Reason of a Status when the variant has no marker.
const NoMarker = "no qualification marker"

// Status is what Check found. Reason says what is wrong, not what to run:
// the command adds that.
type Status struct {
	State  string  `json:"state"`
	Reason string  `json:"reason,omitempty"`
	Marker *Marker `json:"marker,omitempty"`
}

// OK reports whether the host is qualified.
func (s Status) OK() bool { return s.State == Qualified }

// Check compares the marker of want.Variant under root with the binding
// in force now.
func Check(root string, want Binding) Status {
	m, err := Read(root, want.Variant)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Status{State: Unqualified, Reason: NoMarker}
	case err != nil:
		return Status{State: Unqualified, Reason: err.Error()}
	case !m.Qualified || !m.Numerics.Accepted:
		return Status{State: Unqualified, Reason: "the marker records no passing run", Marker: m}
	}
	got := m.Binding()
	var diffs []string
	if got.Host != want.Host {
		diffs = append(diffs, fmt.Sprintf("host: qualified on %s, this is %s", got.Host, want.Host))
	}
	if got.PinsSHA256 != want.PinsSHA256 {
		diffs = append(diffs, fmt.Sprintf("pins: qualified with sha256 %s, now %s", short(got.PinsSHA256), short(want.PinsSHA256)))
	}
	if got.NativeSHA256 != want.NativeSHA256 {
		diffs = append(diffs, fmt.Sprintf("engine binary: qualified with sha256 %s, its record now says %s", short(got.NativeSHA256), short(want.NativeSHA256)))
	}
	if len(diffs) > 0 {
		return Status{State: Stale, Reason: strings.Join(diffs, "; "), Marker: m}
	}
	return Status{State: Qualified, Marker: m}
}

func short(s string) string {
	if s == "" {
		return "(none)"
	}
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
