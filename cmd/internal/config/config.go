// Package config reads drama's config file and applies it to the flags of
// the command that runs; `drama config show` (configcmd) and `drama doctor`
// read it through here too.
//
// The file is YAML, read with go.yaml.in/yaml/v3 (the YAML organisation's
// maintained line of yaml.v3), whose node tree keeps the line of every key:
// an unknown key, or a value a flag refuses, is reported as PATH:LINE, and
// drama config show names the line each setting comes from.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// EnvConfig names the config file, overriding the default place.
const EnvConfig = "DRAMA_CONFIG"

// EnvAddr names the address of drama serve for serve (--addr) and say
// (--server).
const EnvAddr = "DRAMA_ADDR"

// Key is one setting of the config file: a flag of one command.
type Key struct {
	Name    string // section.key as written in the file
	Command string // the command it applies to (its path below drama)
	Flag    string // the flag it sets
	// Env is the environment variable that overrides the file; "" for none.
	Env string
	// EnvByCommand: the command reads Env itself when the flag is unset,
	// so an environment value is left to it instead of set on the flag.
	EnvByCommand bool
	// Map: a mapping in the file, each NAME: VALUE set as NAME=VALUE on
	// a repeatable flag.
	Map bool
	// fromEnv turns an environment value into the flag's value.
	fromEnv func(string) string
	Doc     string
}

// Keys are the settings the config file may hold.
var Keys = []Key{
	{Name: "serve.addr", Command: "serve", Flag: "addr", Env: EnvAddr, Doc: "address drama serve listens on"},
	{Name: "serve.variant", Command: "serve", Flag: "variant", Doc: "variant drama serve serves"},
	{Name: "serve.voices", Command: "serve", Flag: "voices", Doc: "directory of voice files the engine serves"},
	{Name: "serve.default_voice", Command: "serve", Flag: "default-voice", Doc: "voice used when a request names none"},
	{Name: "serve.voice_aliases", Command: "serve", Flag: "voice-alias", Map: true, Doc: "voice names: NAME: VOICE pairs"},
	{Name: "serve.admission", Command: "serve", Flag: "admission", Doc: "memory admission: own, external or off"},
	{Name: "serve.max_queue", Command: "serve", Flag: "max-queue", Doc: "requests that may wait for the engine"},
	{Name: "serve.queue_timeout", Command: "serve", Flag: "queue-timeout", Doc: "longest wait in the queue, e.g. 5m"},
	{Name: "serve.ready_wait", Command: "serve", Flag: "ready-wait", Doc: "how long a request that finds no engine ready waits for one before its 503, e.g. 1s"},
	{Name: "serve.log_file", Command: "serve", Flag: "log-file", Doc: "file drama serve logs to"},
	{Name: "serve.verify", Command: "serve", Flag: "verify", Doc: "check of the variant's files before the engine starts: size, sha256 or none"},
	{Name: "serve.require_qualified", Command: "serve", Flag: "require-qualified", Doc: "answer speech 503 unless drama qualify's marker holds for this host"},
	{Name: "serve.long_form_chars", Command: "serve", Flag: "long-form-chars", Doc: "long-form segment length in characters"},
	{Name: "serve.long_form_history", Command: "serve", Flag: "long-form-history", Doc: "earlier segments each long-form segment is conditioned on"},
	{Name: "serve.gpu_lock", Command: "serve", Flag: "gpu-lock", Doc: "lock file the GPU jobs of this host share, held while the engine is loaded"},
	{Name: "serve.gpu_lock_wait", Command: "serve", Flag: "gpu-lock-wait", Doc: "how long to wait for the GPU lock, e.g. 2m"},
	{Name: "serve.prefix_cache", Command: "serve", Flag: "prefix-cache", Doc: "voice prefixes the engine keeps cached (0: off)"},
	{Name: "serve.api_key_file", Command: "serve", Flag: "api-key-file", Doc: "file of API keys, one a line: KEY [NAME] [SCOPE]; re-read on SIGHUP"},
	{Name: "serve.upload_timeout", Command: "serve", Flag: "upload-timeout", Doc: "longest a whole clone or clip-check upload may take before a 408, e.g. 2m"},
	{Name: "serve.keep_alive", Command: "serve", Flag: "keep-alive", Doc: "unload the engine after this long without a request, e.g. 10m (0: after each request; forever: never)"},
	{Name: "say.server", Command: "say", Flag: "server", Env: EnvAddr, fromEnv: withScheme, Doc: "drama serve's URL for drama say"},
	{Name: "fetch.endpoint", Command: "fetch", Flag: "endpoint", Env: "HF_ENDPOINT", EnvByCommand: true, Doc: "Hub address drama fetch downloads from"},
	{Name: "fetch.workers", Command: "fetch", Flag: "workers", Doc: "parallel download streams"},
}

func withScheme(addr string) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	return "http://" + addr
}

// Value is one key's value in the file and the line it is on.
type Value struct {
	Scalar string
	Pairs  [][2]string // for a Map key, in file order
	Line   int
}

// File is a parsed config file.
type File struct {
	Path   string
	Values map[string]Value
}

// Path returns where the config file is: $DRAMA_CONFIG, else
// $XDG_CONFIG_HOME/drama/config.yaml, else ~/.config/drama/config.yaml.
// explicit reports that DRAMA_CONFIG named it, so a missing file is an
// error.
func Path(getenv func(string) string) (path string, explicit bool) {
	if v := getenv(EnvConfig); v != "" {
		return v, true
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "drama", "config.yaml"), false
}

// Load reads the config file; none at the default place is an empty File.
func Load(getenv func(string) string) (*File, error) {
	path, explicit := Path(getenv)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return &File{Values: map[string]Value{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w (from $%s)", err, EnvConfig)
	}
	return Parse(path, data)
}

// Parse reads a config file's YAML. Every key must be one of Keys.
func Parse(path string, data []byte) (*File, error) {
	cf := &File{Path: path, Values: map[string]Value{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return cf, nil // empty file
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config: %s:%d: want sections such as serve: and fetch:, got a %s", path, top.Line, kindName(top))
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		sk, sv := top.Content[i], top.Content[i+1]
		if sv.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("config: %s:%d: %s: want a section of keys, got a %s; known keys are %s", path, sk.Line, sk.Value, kindName(sv), knownKeys())
		}
		for j := 0; j+1 < len(sv.Content); j += 2 {
			k, v := sv.Content[j], sv.Content[j+1]
			name := sk.Value + "." + k.Value
			key, ok := lookup(name)
			if !ok {
				return nil, fmt.Errorf("config: %s:%d: unknown key %s: known keys are %s", path, k.Line, name, knownKeys())
			}
			if _, dup := cf.Values[name]; dup {
				return nil, fmt.Errorf("config: %s:%d: %s is set twice", path, k.Line, name)
			}
			val := Value{Line: k.Line}
			switch {
			case key.Map && v.Kind == yaml.MappingNode:
				for m := 0; m+1 < len(v.Content); m += 2 {
					if v.Content[m+1].Kind != yaml.ScalarNode {
						return nil, fmt.Errorf("config: %s:%d: %s: %s: want a value, got a %s", path, v.Content[m].Line, name, v.Content[m].Value, kindName(v.Content[m+1]))
					}
					val.Pairs = append(val.Pairs, [2]string{v.Content[m].Value, v.Content[m+1].Value})
				}
			case key.Map:
				return nil, fmt.Errorf("config: %s:%d: %s: want NAME: VOICE pairs, got a %s", path, k.Line, name, kindName(v))
			case v.Kind != yaml.ScalarNode:
				return nil, fmt.Errorf("config: %s:%d: %s: want a value, got a %s", path, k.Line, name, kindName(v))
			default:
				val.Scalar = v.Value
			}
			cf.Values[name] = val
		}
	}
	return cf, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "value"
	}
	return "node"
}

func lookup(name string) (Key, bool) {
	for _, k := range Keys {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

func knownKeys() string {
	names := make([]string, len(Keys))
	for i, k := range Keys {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}

// Setting is one key's effective value and where it came from.
type Setting struct {
	Key    string `json:"key"`
	Flag   string `json:"flag"`
	Value  string `json:"value"`
	Source string `json:"source"` // flag, env NAME, file PATH:LINE, default
	// Unsupported: the command has no such flag in this drama; the value
	// is not applied.
	Unsupported bool `json:"unsupported,omitempty"`
}

// Resolve works out the settings of command cmd (named command): a flag
// the user gave wins, then the environment, then the file, then the
// flag's default. With apply, values from the environment and the file
// are set on cmd's flags.
func Resolve(cmd *cobra.Command, command string, cf *File, getenv func(string) string, apply bool) ([]Setting, error) {
	var out []Setting
	for _, k := range Keys {
		if k.Command != command {
			continue
		}
		fl := cmd.Flag(k.Flag)
		if fl == nil {
			if v, ok := cf.Values[k.Name]; ok {
				out = append(out, Setting{Key: k.Name, Flag: "--" + k.Flag, Value: v.String(), Source: fmt.Sprintf("file %s:%d", cf.Path, v.Line), Unsupported: true})
			}
			continue
		}
		s := Setting{Key: k.Name, Flag: "--" + k.Flag}
		env := ""
		if k.Env != "" {
			env = getenv(k.Env)
		}
		v, inFile := cf.Values[k.Name]
		switch {
		case fl.Changed:
			s.Value, s.Source = flagValue(fl), "flag"
		case env != "":
			s.Source = "env " + k.Env
			s.Value = env
			if k.fromEnv != nil {
				s.Value = k.fromEnv(env)
			}
			if apply && !k.EnvByCommand {
				if err := fl.Value.Set(s.Value); err != nil {
					return nil, cmdutil.FlagErrorf("$%s=%q for %s: %v", k.Env, env, s.Flag, err)
				}
			}
		case inFile:
			s.Value, s.Source = v.String(), fmt.Sprintf("file %s:%d", cf.Path, v.Line)
			if apply {
				if err := set(fl, v); err != nil {
					return nil, cmdutil.FlagErrorf("config: %s:%d: %s: %v", cf.Path, v.Line, k.Name, err)
				}
			}
		default:
			s.Value, s.Source = flagValue(fl), "default"
		}
		out = append(out, s)
	}
	return out, nil
}

func set(fl *pflag.Flag, v Value) error {
	if v.Pairs == nil {
		return fl.Value.Set(v.Scalar)
	}
	for _, p := range v.Pairs {
		if err := fl.Value.Set(p[0] + "=" + p[1]); err != nil {
			return err
		}
	}
	return nil
}

// flagValue is a flag's value as the user would type it.
func flagValue(fl *pflag.Flag) string {
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		return strings.Join(sv.GetSlice(), ",")
	}
	return fl.Value.String()
}

// String is the value as drama config show prints it.
func (v Value) String() string {
	if v.Pairs == nil {
		return v.Scalar
	}
	parts := make([]string, len(v.Pairs))
	for i, p := range v.Pairs {
		parts[i] = p[0] + "=" + p[1]
	}
	return strings.Join(parts, ",")
}

// Commands are the commands the file has settings for, in the order of Keys.
func Commands() []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range Keys {
		if !seen[k.Command] {
			seen[k.Command] = true
			out = append(out, k.Command)
		}
	}
	return out
}

// Apply loads the config file and sets the flags of cmd, the command about
// to run, that the user did not give, from the environment or the file.
// Commands without settings are left alone, so a broken file stops only
// the commands it configures. A setting for a flag this drama's command
// lacks is warned about and skipped.
func Apply(cmd *cobra.Command, f *cmdutil.Factory) error {
	command := commandName(cmd)
	if !slices.Contains(Commands(), command) {
		return nil
	}
	cf, err := Load(f.Getenv)
	if err != nil {
		return cmdutil.FlagErrorf("%v", err)
	}
	settings, err := Resolve(cmd, command, cf, f.Getenv, true)
	if err != nil {
		return err
	}
	for _, s := range settings {
		if s.Unsupported {
			f.Warnf("%s: %s: this drama's %s has no %s flag; the setting is skipped", s.Source[len("file "):], s.Key, command, s.Flag)
		}
	}
	return nil
}

// commandName is cmd's path below the root: "serve", "pins lock".
func commandName(cmd *cobra.Command) string {
	path := cmd.CommandPath()
	if root := cmd.Root(); root != nil {
		path = strings.TrimPrefix(path, root.Name())
	}
	return strings.TrimSpace(path)
}
