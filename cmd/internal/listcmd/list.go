// Package listcmd implements `drama list`.
package listcmd

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine/qualify"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
	"github.com/drama-tts/drama/voices"
)

// Options are the inputs of `drama list`.
type Options struct {
	F *cmdutil.Factory
}

// NewCmd returns `drama list`. runF, if not nil, replaces the run (tests).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the variants installed under the root",
		Long: strings.TrimSpace(`
List the variants installed under the root (each directory with a
pins.lock.json, as drama fetch leaves it): size on disk, verified state,
the engine binary recorded, qualification, and voice counts.

SIZE counts each file's content once, however many variants, links and
cache snapshots share it; SHARED is how much of it another variant uses
too, and CACHE how much something else in the Hugging Face cache (another
snapshot or ref, another hard link) still holds: drama rm keeps that.

VERIFIED is "sha256" with the time of the last full check when drama
verify --level sha256 vouched for every file and none has changed since,
"size" when every file is present with its pinned size, else what is
missing. ENGINE is the native engine binary found and the sha256 recorded
in <root>/engine/engine.sha256. QUALIFIED is what drama qualify --check
would say of the variant's marker: "qualified" with the time of the run
and what it found of the replies' words ("word error rate 1.31 %", or
"intelligibility not checked" when no transcriber heard them),
"stale" when the pins, the engine record or the host changed since, "-"
while no qualification is recorded. VOICES counts the voice files a variant ships; CLONED
counts the cloned voices in <root>/voices, which every variant of the
root can use.`),
		Example: strings.TrimSpace(`
$ drama list
$ drama list --json`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	return cmd
}

// Report is the JSON document of `drama list --json`.
type Report struct {
	Root   string   `json:"root"`
	Caches []string `json:"caches"`
	// Bytes is the disk use of all installs, shared content counted once.
	Bytes    int64     `json:"bytes"`
	Variants []Variant `json:"variants"`
}

// Variant is one installed variant.
type Variant struct {
	Variant  string             `json:"variant"`
	Dir      string             `json:"dir"`
	Repo     string             `json:"repo,omitempty"`
	Revision string             `json:"revision,omitempty"`
	Files    int                `json:"files"`
	Usage    *hub.VariantUsage  `json:"usage,omitempty"`
	Verified pins.VerifiedState `json:"verified"`
	Engine   Engine             `json:"engine"`
	// Qualified is the state of the recorded qualification on this host
	// (qualify.Qualified, qualify.Stale or qualify.Unqualified, as drama
	// qualify --check says it); null while none is recorded.
	Qualified *string `json:"qualified"`
	// QualifiedAt is when the recorded qualification ran.
	QualifiedAt *time.Time `json:"qualified_at,omitempty"`
	// Intelligibility is what the qualification found of the replies'
	// words: "word error rate 1.31 %" or "intelligibility not checked";
	// WER the rate itself (0.0131), when it was measured. Both only while
	// the host is qualified.
	Intelligibility *string  `json:"intelligibility,omitempty"`
	WER             *float64 `json:"wer,omitempty"`
	Voices          int      `json:"voices"`
	ClonedVoices    int      `json:"cloned_voices"`
	Error           string   `json:"error,omitempty"`
}

// Engine is the engine binary a variant would be served with.
type Engine struct {
	Plugin string `json:"plugin"`           // cuda or metal
	Binary string `json:"binary,omitempty"` // the binary found; "" when none
	SHA256 string `json:"sha256,omitempty"` // the sha256 recorded in <root>/engine/engine.sha256
}

func run(_ context.Context, opts *Options) error {
	f := opts.F
	rep, err := report(f)
	if err != nil {
		return err
	}
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, rep)
	}
	if len(rep.Variants) == 0 {
		f.Infof("no variant is installed in %s: run %s (or --variant %s)", rep.Root, f.Suggest("fetch", "--variant", f.Global.Variant), strings.Join(otherVariants(f.Global.Variant), ", "))
		return nil
	}
	return printTable(f, rep)
}

// report describes the variants installed under the root.
func report(f *cmdutil.Factory) (Report, error) {
	root, installs, placed, err := cmdutil.Installs(f)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Root: root, Variants: []Variant{}}
	for _, c := range cmdutil.Caches(f, root) {
		rep.Caches = append(rep.Caches, c.Dir)
	}
	var ok []pins.Install
	for _, in := range installs {
		if in.Pins != nil {
			ok = append(ok, in)
		}
	}
	usage := hub.DiskUsage(ok, placed)
	rep.Bytes = usage.Bytes
	held := cacheHeld(root, ok, placed)
	record, recErr := cmdutil.EngineRecord(root)
	cloned := countVoices(filepath.Join(root, "voices"))
	for _, in := range installs {
		v := Variant{Variant: in.Variant, Dir: in.Dir, ClonedVoices: cloned}
		if in.Pins == nil {
			v.Error = in.Err.Error()
			rep.Variants = append(rep.Variants, v)
			continue
		}
		p := in.Pins
		v.Repo, v.Revision, v.Files = p.Repo, p.Revision, len(p.Files)
		v.Usage = usage.Variants[in.Variant]
		for _, pl := range placed[in.Variant] {
			if _, ok := held[in.Variant][pl.ID]; ok && !pl.Missing {
				v.Usage.CacheBytes += pl.Size
			}
		}
		v.Verified = pins.StateOf(in.Dir, p)
		v.Engine.Plugin = p.Engine
		if bin, err := cmdutil.EngineBinary(f, "", p.Engine, root); err == nil {
			v.Engine.Binary = bin
		}
		if recErr == nil {
			v.Engine.SHA256 = record
		}
		qualification(&v, root, p, record)
		for _, pf := range p.Files {
			if strings.HasPrefix(pf.Path, "voices/") && path.Ext(pf.Path) == ".json" {
				v.Voices++
			}
		}
		rep.Variants = append(rep.Variants, v)
	}
	return rep, nil
}

// cacheHeld returns, per variant, the files of it that something else in
// the cache still holds (hub.Holders): another snapshot or ref, another
// hard link.
func cacheHeld(root string, installs []pins.Install, placed map[string][]hub.Placed) map[string]map[pins.FileID]string {
	held := map[string]map[pins.FileID]string{}
	for _, in := range installs {
		own := map[string]bool{}
		for _, pl := range placed[in.Variant] {
			own[pl.Snapshot] = true
		}
		refs := map[string]bool{hub.PinnedRef: true, hub.RootRef(root): true}
		if h, err := hub.Holders(placed[in.Variant], own, refs); err == nil {
			held[in.Variant] = h
		}
	}
	return held
}

// printTable prints the report as a table, then the invalid lock files'
// errors and the disk use of all installs.
func printTable(f *cmdutil.Factory, rep Report) error {
	t := cmdutil.NewTable(f.IO, "variant", "size", "shared", "cache", "verified", "engine", "qualified", "voices", "cloned")
	for _, v := range rep.Variants {
		if v.Error != "" {
			t.AddRow(v.Variant, "-", "-", "-", "invalid lock file", "-", "-", "-", "-")
			continue
		}
		t.AddRow(v.Variant, cmdutil.HumanBytes(v.Usage.Bytes), shared(v.Usage), cache(v.Usage), verified(v.Verified),
			engine(v.Engine), qualified(v), fmt.Sprint(v.Voices), fmt.Sprint(v.ClonedVoices))
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, v := range rep.Variants {
		if v.Error != "" {
			f.Warnf("%s", v.Error)
		}
	}
	f.Infof("%s on disk in all, content shared between variants and with the cache counted once", cmdutil.HumanBytes(rep.Bytes))
	return nil
}

// otherVariants returns the variants but v.
func otherVariants(v string) []string {
	var out []string
	for _, o := range pins.Variants {
		if o != v {
			out = append(out, o)
		}
	}
	return out
}

func shared(u *hub.VariantUsage) string {
	if u.SharedBytes == 0 {
		return "-"
	}
	return cmdutil.HumanBytes(u.SharedBytes) + " with " + strings.Join(u.SharedWith, ",")
}

func cache(u *hub.VariantUsage) string {
	if u.CacheBytes == 0 {
		return "-"
	}
	return cmdutil.HumanBytes(u.CacheBytes)
}

func verified(s pins.VerifiedState) string {
	switch s.Level {
	case pins.LevelSHA256:
		return "sha256 " + s.When.UTC().Format("2006-01-02 15:04 UTC")
	case pins.LevelSize:
		return "size"
	}
	var parts []string
	if s.Missing > 0 {
		parts = append(parts, fmt.Sprintf("%d missing", s.Missing))
	}
	if s.Differ > 0 {
		parts = append(parts, fmt.Sprintf("%d wrong size", s.Differ))
	}
	return strings.Join(parts, ", ")
}

// qualification sets v's qualification from the variant's marker, checked
// against this host, the variant's pins and the engine record as drama
// qualify --check does.
func qualification(v *Variant, root string, p *pins.Pins, record string) {
	sum, err := qualify.PinsSHA256(p)
	if err != nil {
		return
	}
	st := qualify.Check(root, qualify.Binding{Variant: v.Variant, Host: qualify.HostID(), PinsSHA256: sum, NativeSHA256: record})
	if st.Reason == qualify.NoMarker {
		return
	}
	v.Qualified = &st.State
	if st.Marker != nil && !st.Marker.QualifiedAt.IsZero() {
		at := st.Marker.QualifiedAt.UTC()
		v.QualifiedAt = &at
	}
	if st.OK() {
		in := st.Marker.Intelligibility.Short()
		v.Intelligibility, v.WER = &in, st.Marker.Intelligibility.WER
	}
}

func qualified(v Variant) string {
	switch {
	case v.Qualified == nil:
		return "-"
	case *v.Qualified == qualify.Qualified && v.QualifiedAt != nil:
		s := "qualified " + v.QualifiedAt.Format("2006-01-02 15:04 UTC")
		if v.Intelligibility != nil {
			s += " (" + *v.Intelligibility + ")"
		}
		return s
	}
	return *v.Qualified
}

func engine(e Engine) string {
	switch {
	case e.Binary == "" && e.SHA256 == "":
		return "-"
	case e.SHA256 == "":
		return e.Binary + " (no sha256 recorded)"
	case e.Binary == "":
		return "sha256 " + e.SHA256[:12] + " (binary not found)"
	}
	return e.Binary + " sha256 " + e.SHA256[:12]
}

// countVoices counts the voice files of dir that parse.
func countVoices(dir string) int {
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	n := 0
	for _, name := range names {
		if _, err := voices.ReadFile(name, nil); err == nil {
			n++
		}
	}
	return n
}
