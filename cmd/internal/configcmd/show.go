// Package configcmd implements `drama config show`: each setting of the
// config file (package config) with its effective value and source.
package configcmd

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/config"
)

// ShowOptions are the inputs of `drama config show`.
type ShowOptions struct {
	F *cmdutil.Factory
	// Root is the drama command whose subcommands the settings are for.
	Root *cobra.Command
}

// NewCmd returns `drama config` with its subcommand show.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config <command>",
		Short: "Show the settings drama takes from its config file and environment",
		Long: strings.TrimSpace(`
drama reads settings an operator sets once from a YAML file:
$DRAMA_CONFIG, else $XDG_CONFIG_HOME/drama/config.yaml, else
~/.config/drama/config.yaml. A flag given on the command line wins over
the environment, the environment over the file, the file over the
default. DRAMA_ADDR names drama serve's address for serve (--addr) and say
(--server); HF_ENDPOINT the Hub for fetch.

The keys, each the flag of one command:

` + keyDocs() + `

An example file:

  serve:
    addr: 127.0.0.1:8793
    variant: nvfp4
    admission: own
    max_queue: 64
  fetch:
    workers: 16

An unknown key, or a value its flag refuses, is an error naming the file
and line, for the commands the file configures.`),
	}
	cmd.AddCommand(newShowCmd(f))
	return cmd
}

func keyDocs() string {
	var b strings.Builder
	for i, k := range config.Keys {
		if i > 0 {
			b.WriteString("\n")
		}
		env := ""
		if k.Env != "" {
			env = ", $" + k.Env
		}
		b.WriteString("  " + k.Name + strings.Repeat(" ", max(1, 21-len(k.Name))) + k.Command + " --" + k.Flag + env + ": " + k.Doc)
	}
	return b.String()
}

func newShowCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &ShowOptions{F: f}
	return &cobra.Command{
		Use:   "show",
		Short: "Print each setting's effective value and where it comes from",
		Long: strings.TrimSpace(`
Print each setting of the config file's keys as the commands would use it
now: its value and where it comes from: flag (a global flag given here,
such as --variant), env NAME, file PATH:LINE, or default. A setting for a
flag this drama's command does not have is listed as not applied.`),
		Example: strings.TrimSpace(`
$ drama config show
$ drama config show --json`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Root = cmd.Root()
			return runShow(cmd.Context(), opts)
		},
	}
}

// ShowReport is the JSON document of `drama config show --json`.
type ShowReport struct {
	File     string           `json:"file"`
	Found    bool             `json:"found"`
	Settings []config.Setting `json:"settings"`
}

func runShow(_ context.Context, opts *ShowOptions) error {
	f := opts.F
	cf, err := config.Load(f.Getenv)
	if err != nil {
		return cmdutil.FlagErrorf("%v", err)
	}
	path, _ := config.Path(f.Getenv)
	_, statErr := os.Stat(path)
	rep := ShowReport{File: path, Found: statErr == nil, Settings: []config.Setting{}}
	for _, name := range config.Commands() {
		target, _, err := opts.Root.Find(strings.Fields(name))
		if err != nil || target == opts.Root {
			continue
		}
		s, err := config.Resolve(target, name, cf, f.Getenv, false)
		if err != nil {
			return err
		}
		rep.Settings = append(rep.Settings, s...)
	}
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, rep)
	}
	t := cmdutil.NewTable(f.IO, "key", "flag", "value", "source")
	for _, s := range rep.Settings {
		src := s.Source
		if s.Unsupported {
			src += " (not applied: no such flag)"
		}
		val := s.Value
		if val == "" {
			val = `""`
		}
		t.AddRow(s.Key, s.Flag, val, src)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if rep.Found {
		f.Infof("config file: %s", path)
	} else {
		f.Infof("config file: %s (none)", path)
	}
	return nil
}
