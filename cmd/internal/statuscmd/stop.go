package statuscmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/internal/wait"
	"github.com/drama-tts/drama/pins"
)

// DefaultGrace is drama serve's --grace, the wait for a server whose
// record does not say its own.
const DefaultGrace = 10 * time.Second

// StopOptions are the inputs of `drama stop`.
type StopOptions struct {
	F *cmdutil.Factory
	// Variant, when not "", stops only the servers of that variant.
	Variant string
	// Poll is how often a stopping server is looked at; tests shorten it.
	Poll time.Duration
}

// NewCmdStop returns `drama stop`. runF, if not nil, replaces the run (tests).
func NewCmdStop(f *cmdutil.Factory, runF func(context.Context, *StopOptions) error) *cobra.Command {
	opts := &StopOptions{F: f, Poll: 50 * time.Millisecond}
	cmd := &cobra.Command{
		Use:   "stop [VARIANT]",
		Short: "Stop the drama serve running on the root",
		Long: strings.TrimSpace(`
Stop the drama serve running on the root (of VARIANT only, when given),
found from the record it keeps in <root>/run as drama status lists it: it
gets SIGTERM, as a service manager stops it, and drama stop waits while it
lets the requests in flight finish within its --grace (from the record),
then stops its engine, which gets as long again.

A record whose process is gone is skipped. With no drama serve running
there is nothing to stop, and drama stop says so and exits 0; a VARIANT
that no running drama serve serves is an error naming those that run.`),
		Example: strings.TrimSpace(`
$ drama stop
$ drama stop nvfp4 --root ./demo/root`),
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cobra.FixedCompletions(pins.Variants, cobra.ShellCompDirectiveNoFileComp),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if !slices.Contains(pins.Variants, args[0]) {
					return cmdutil.FlagErrorf("unknown variant %q: use one of %s", args[0], strings.Join(pins.Variants, ", "))
				}
				opts.Variant = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runStop(cmd.Context(), opts)
		},
	}
	return cmd
}

// Stopped is one drama serve that drama stop stopped.
type Stopped struct {
	PID     int     `json:"pid"`
	Addr    string  `json:"addr"`
	Variant string  `json:"variant"`
	Seconds float64 `json:"seconds"` // from SIGTERM to its exit
}

// StopReport is the JSON document of `drama stop --json`.
type StopReport struct {
	Root    string    `json:"root"`
	Stopped []Stopped `json:"stopped"`
}

func runStop(ctx context.Context, opts *StopOptions) error {
	f := opts.F
	root, err := f.Root()
	if err != nil {
		return err
	}
	recs, err := serverec.List(root)
	if err != nil {
		return err
	}
	var todo []serverec.Record
	var others []string
	other := ""
	for _, rec := range recs {
		if opts.Variant == "" || rec.Variant == opts.Variant {
			todo = append(todo, rec)
		} else {
			others = append(others, fmt.Sprintf("%s (pid %d, %s)", rec.Variant, rec.PID, rec.Addr))
			other = rec.Variant
		}
	}
	rep := StopReport{Root: root, Stopped: []Stopped{}}
	switch {
	case len(todo) == 0 && len(others) > 0:
		return fmt.Errorf("no drama serve of %s runs on %s; running: %s: run %s", opts.Variant, root, strings.Join(others, ", "), f.Suggest("stop", other))
	case len(todo) == 0:
		f.Infof("no drama serve runs on %s: nothing to stop", root)
		if f.Global.JSON {
			return cmdutil.WriteJSON(f.IO.Out, rep)
		}
		return nil
	}
	var errs []error
	for _, rec := range todo {
		s, err := stopOne(ctx, opts, rec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Stopped = append(rep.Stopped, s)
		if !f.Global.JSON {
			fmt.Fprintf(f.IO.Out, "stopped drama serve (pid %d, http://%s, variant %s) in %.1f s\n", s.PID, s.Addr, s.Variant, s.Seconds)
		}
	}
	if f.Global.JSON {
		if err := cmdutil.WriteJSON(f.IO.Out, rep); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// stopOne sends rec's process SIGTERM and waits for it to exit: its grace
// for the requests in flight, as long again for its engine, and a little
// more.
func stopOne(ctx context.Context, opts *StopOptions, rec serverec.Record) (Stopped, error) {
	grace := DefaultGrace
	if d, err := time.ParseDuration(rec.Grace); err == nil && d >= 0 {
		grace = d
	}
	limit := 2*grace + 5*time.Second
	desc := fmt.Sprintf("drama serve (pid %d, http://%s, variant %s)", rec.PID, rec.Addr, rec.Variant)
	start := time.Now()
	if err := syscall.Kill(rec.PID, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return Stopped{PID: rec.PID, Addr: rec.Addr, Variant: rec.Variant}, nil
		}
		return Stopped{}, fmt.Errorf("%s: %w: stop it as the user who started it", desc, err)
	}
	opts.F.Infof("stopping %s: SIGTERM sent; waiting up to %s (its grace %s, then its engine's stop)", desc, limit, grace)
	for serverec.Alive(rec) {
		if time.Since(start) > limit {
			return Stopped{}, fmt.Errorf("%s still runs %s after SIGTERM: see its log (drama status lists it), or end it at once with kill -KILL %d", desc, limit, rec.PID)
		}
		if err := wait.Sleep(ctx, opts.Poll); err != nil {
			return Stopped{}, err
		}
	}
	return Stopped{PID: rec.PID, Addr: rec.Addr, Variant: rec.Variant, Seconds: time.Since(start).Seconds()}, nil
}
