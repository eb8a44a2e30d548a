package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/config"
	"github.com/drama-tts/drama/cmd/internal/configcmd"
	"github.com/drama-tts/drama/cmd/internal/fetchcmd"
	"github.com/drama-tts/drama/cmd/internal/saycmd"
	"github.com/drama-tts/drama/cmd/internal/servecmd"
)

type buf interface{ String() string }

const sample = `# drama settings
serve:
  addr: 127.0.0.1:9000
  variant: nvfp4
  admission: off
  max_queue: 64
  queue_timeout: 90s
fetch:
  endpoint: http://127.0.0.1:1
  workers: 3
`

func writeConfig(t *testing.T, text string) string {
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tree is a drama root with the real serve, say and fetch commands, whose
// runs only capture their options, and the root's config hook.
type tree struct {
	root  *cobra.Command
	serve *servecmd.Options
	say   *saycmd.Options
	fetch *fetchcmd.FetchOptions
}

func newTree(f *cmdutil.Factory) *tree {
	tr := &tree{}
	root := &cobra.Command{Use: "drama", SilenceErrors: true, SilenceUsage: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error { return config.Apply(cmd, f) }}
	root.PersistentFlags().StringVar(&f.Global.Variant, "variant", "full", "")
	root.PersistentFlags().StringVar(&f.Global.Root, "root", "", "")
	root.PersistentFlags().BoolVar(&f.Global.JSON, "json", false, "")
	root.AddCommand(
		servecmd.NewCmd(f, func(_ context.Context, o *servecmd.Options) error { tr.serve = o; return nil }),
		saycmd.NewCmd(f, func(_ context.Context, o *saycmd.Options) error { tr.say = o; return nil }),
		fetchcmd.NewCmd(f, func(_ context.Context, o *fetchcmd.FetchOptions) error { tr.fetch = o; return nil }),
		configcmd.NewCmd(f),
	)
	tr.root = root
	return tr
}

func TestFileSetsFlagsNotGiven(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, config.EnvConfig, writeConfig(t, sample))
	tr := newTree(f)
	if err := cmdtest.Execute(tr.root, "serve", "--max-queue", "5"); err != nil {
		t.Fatal(err)
	}
	o := tr.serve
	if o.Addr != "127.0.0.1:9000" || f.Global.Variant != "nvfp4" || o.Admission != "off" || o.MaxQueue != 5 || o.QueueTimeout != 90*time.Second {
		t.Fatalf("serve options %+v variant %s", o, f.Global.Variant)
	}
	if err := cmdtest.Execute(tr.root, "fetch"); err != nil {
		t.Fatal(err)
	}
	if tr.fetch.Endpoint != "http://127.0.0.1:1" || tr.fetch.Workers != 3 {
		t.Fatalf("fetch options %+v", tr.fetch)
	}
}

func TestEnvironmentBeatsTheFileAndFlagsBeatBoth(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, config.EnvConfig, writeConfig(t, sample), config.EnvAddr, "127.0.0.1:7000", "HF_ENDPOINT", "http://127.0.0.1:2")
	tr := newTree(f)
	if err := cmdtest.Execute(tr.root, "serve"); err != nil {
		t.Fatal(err)
	}
	if tr.serve.Addr != "127.0.0.1:7000" {
		t.Fatalf("serve --addr %q, want DRAMA_ADDR's", tr.serve.Addr)
	}
	if err := cmdtest.Execute(tr.root, "say", "hello"); err != nil {
		t.Fatal(err)
	}
	if tr.say.Server != "http://127.0.0.1:7000" {
		t.Fatalf("say --server %q, want DRAMA_ADDR's", tr.say.Server)
	}
	// fetch reads HF_ENDPOINT itself when --endpoint is unset: the file must not shadow it.
	if err := cmdtest.Execute(tr.root, "fetch"); err != nil {
		t.Fatal(err)
	}
	if tr.fetch.Endpoint != "" {
		t.Fatalf("fetch --endpoint %q, want it left to HF_ENDPOINT", tr.fetch.Endpoint)
	}
	tr = newTree(f)
	if err := cmdtest.Execute(tr.root, "serve", "--addr", "127.0.0.1:6000"); err != nil {
		t.Fatal(err)
	}
	if tr.serve.Addr != "127.0.0.1:6000" {
		t.Fatalf("serve --addr %q, want the flag's", tr.serve.Addr)
	}
}

func TestUnknownKeyNamesFileLineAndKey(t *testing.T) {
	path := writeConfig(t, "serve:\n  addr: 127.0.0.1:9000\n  adress: x\n")
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, config.EnvConfig, path)
	err := cmdtest.Execute(newTree(f).root, "serve")
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), path+":3: unknown key serve.adress: known keys are serve.addr,") {
		t.Fatalf("err = %v", err)
	}
}

func TestBadValueNamesFileLine(t *testing.T) {
	path := writeConfig(t, "fetch:\n  workers: many\n")
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, config.EnvConfig, path)
	err := cmdtest.Execute(newTree(f).root, "fetch")
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), path+":2: fetch.workers: ") {
		t.Fatalf("err = %v", err)
	}
	// A command the file does not configure runs regardless.
	if err := cmdtest.Execute(newTree(f).root, "say", "hi"); err != nil {
		t.Fatalf("say: %v", err)
	}
}

func showFixture(t *testing.T, extraEnv ...string) (*cmdutil.Factory, *cmdutil.IOStreams, *tree, string) {
	path := writeConfig(t, sample+"  \nsay:\n  server: http://127.0.0.1:9000\n")
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, append([]string{config.EnvConfig, path, config.EnvAddr, "127.0.0.1:7000"}, extraEnv...)...)
	return f, ios, newTree(f), path
}

func TestShowPiped(t *testing.T) {
	f, ios, tr, path := showFixture(t)
	_ = f
	if err := cmdtest.Execute(tr.root, "config", "show", "--variant", "macos"); err != nil {
		t.Fatal(err)
	}
	out := ios.Out.(buf).String()
	for _, want := range []string{
		"serve.addr\t--addr\t127.0.0.1:7000\tenv DRAMA_ADDR\n",
		"serve.variant\t--variant\tmacos\tflag\n",
		"serve.voices\t--voices\t\"\"\tdefault\n",
		"serve.admission\t--admission\toff\tfile " + path + ":5\n",
		"serve.queue_timeout\t--queue-timeout\t90s\tfile " + path + ":7\n",
		"say.server\t--server\thttp://127.0.0.1:7000\tenv DRAMA_ADDR\n",
		"fetch.workers\t--workers\t3\tfile " + path + ":10\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if !strings.Contains(ios.ErrOut.(buf).String(), "config file: "+path) {
		t.Errorf("stderr %q", ios.ErrOut.(buf).String())
	}
}

func TestShowTTY(t *testing.T) {
	_, ios, tr, _ := showFixture(t)
	ios.SetStdoutTTY(true)
	if err := cmdtest.Execute(tr.root, "config", "show"); err != nil {
		t.Fatal(err)
	}
	out := ios.Out.(buf).String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "KEY ") || strings.Contains(out, "\t") || len(lines) < 10 {
		t.Fatalf("tty:\n%s", out)
	}
	col := strings.Index(lines[0], "SOURCE")
	for _, l := range lines[1:] {
		if len(l) <= col || l[col-1] != ' ' {
			t.Fatalf("misaligned %q in\n%s", l, out)
		}
	}
}

func TestShowJSONAndAKeyWithoutItsFlag(t *testing.T) {
	path := writeConfig(t, "serve:\n  log_file: /var/log/drama.log\n")
	ios, _, out, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, config.EnvConfig, path)
	f.Global.JSON = true
	tr := withoutLogFile(newTree(f))
	if err := cmdtest.Execute(tr.root, "config", "show", "--json"); err != nil {
		t.Fatal(err)
	}
	var rep configcmd.ShowReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, s := range rep.Settings {
		if s.Key == "serve.log_file" {
			found = s.Unsupported && s.Source == "file "+path+":2" && s.Value == "/var/log/drama.log"
		}
	}
	if rep.File != path || !rep.Found || !found {
		t.Fatalf("report %+v", rep)
	}
}

func TestApplyWarnsOfAKeyWithoutItsFlag(t *testing.T) {
	path := writeConfig(t, "serve:\n  addr: 127.0.0.1:9001\n  log_file: /var/log/drama.log\n")
	ios, _, _, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, config.EnvConfig, path)
	tr := withoutLogFile(newTree(f))
	if err := cmdtest.Execute(tr.root, "serve"); err != nil {
		t.Fatal(err)
	}
	if tr.serve.Addr != "127.0.0.1:9001" || !strings.Contains(errOut.String(), path+":3: serve.log_file: this drama's serve has no --log-file flag") {
		t.Fatalf("addr %s stderr %q", tr.serve.Addr, errOut)
	}
}

// The example file of drama config --help and the README parses and applies.
func TestHelpExampleFileApplies(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	help := configcmd.NewCmd(cmdtest.Factory(ios)).Long
	i := strings.Index(help, "An example file:\n\n")
	j := strings.Index(help, "\n\nAn unknown key")
	if i < 0 || j < i {
		t.Fatal("no example file in the help")
	}
	var lines []string
	for _, l := range strings.Split(help[i+len("An example file:\n\n"):j], "\n") {
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	f := cmdtest.Factory(ios, config.EnvConfig, writeConfig(t, strings.Join(lines, "\n")+"\n"))
	tr := newTree(f)
	if err := cmdtest.Execute(tr.root, "serve"); err != nil {
		t.Fatal(err)
	}
	if tr.serve.MaxQueue != 64 || f.Global.Variant != "nvfp4" {
		t.Fatalf("serve %+v variant %s", tr.serve, f.Global.Variant)
	}
}

// serveCmd is the tree's drama serve.
// withoutLogFile gives tr the serve command of a drama older than
// --log-file (it has --addr alone), so that the setting serve.log_file
// names a flag its serve lacks.
func withoutLogFile(tr *tree) *tree {
	tr.root.RemoveCommand(serveCmd(tr))
	var addr string
	older := &cobra.Command{Use: "serve", RunE: func(*cobra.Command, []string) error {
		tr.serve = &servecmd.Options{Addr: addr}
		return nil
	}}
	older.Flags().StringVar(&addr, "addr", servecmd.DefaultAddr, "")
	tr.root.AddCommand(older)
	return tr
}

func serveCmd(tr *tree) *cobra.Command {
	c, _, _ := tr.root.Find([]string{"serve"})
	return c
}

// serve.log_file sets drama serve's --log-file.
func TestLogFileSettingApplies(t *testing.T) {
	path := writeConfig(t, "serve:\n  log_file: /var/log/drama.log\n")
	ios, _, _, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, config.EnvConfig, path)
	tr := newTree(f)
	if err := cmdtest.Execute(tr.root, "serve"); err != nil {
		t.Fatal(err)
	}
	if tr.serve.LogFile != "/var/log/drama.log" || strings.Contains(errOut.String(), "log_file") {
		t.Fatalf("log file %q stderr %q", tr.serve.LogFile, errOut)
	}
}

// The load-time settings of drama serve come from the file, and a value
// the flag refuses is refused as the flag's.
func TestServeLoadSettingsApply(t *testing.T) {
	path := writeConfig(t, "serve:\n  verify: sha256\n  require_qualified: true\n  long_form_chars: 320\n  long_form_history: 0\n  prefix_cache: 0\n")
	ios, _, _, _ := cmdtest.IOStreams()
	tr := newTree(cmdtest.Factory(ios, config.EnvConfig, path))
	if err := cmdtest.Execute(tr.root, "serve"); err != nil {
		t.Fatal(err)
	}
	o := tr.serve
	if o.Verify != "sha256" || !o.RequireQualified || o.LongFormChars != 320 || o.LongFormHistory != 0 || o.PrefixCache != 0 {
		t.Fatalf("serve %+v", o)
	}
	for file, want := range map[string]string{
		"serve:\n  verify: maybe\n":      `--verify "maybe": want size, sha256 or none`,
		"serve:\n  prefix_cache: -1\n":   "--prefix-cache must be 0 (off) or more",
		"serve:\n  long_form_chars: 0\n": "--long-form-chars must be 1 or more",
	} {
		tr := newTree(cmdtest.Factory(ios, config.EnvConfig, writeConfig(t, file)))
		if err := cmdtest.Execute(tr.root, "serve"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", file, err, want)
		}
	}
}

// serve.keep_alive sets drama serve's --keep-alive, as a duration, a
// number of seconds, 0 or forever; drama config show lists it.
func TestKeepAliveSettingApplies(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	for file, want := range map[string]time.Duration{
		"serve:\n  keep_alive: 10m\n":      10 * time.Minute,
		"serve:\n  keep_alive: 600\n":      10 * time.Minute,
		"serve:\n  keep_alive: 0\n":        0,
		"serve:\n  keep_alive: forever\n":  -1,
		"serve:\n  keep_alive: -1\n":       -1,
		"serve:\n  addr: 127.0.0.1:8793\n": -1, // the default
	} {
		tr := newTree(cmdtest.Factory(ios, config.EnvConfig, writeConfig(t, file)))
		if err := cmdtest.Execute(tr.root, "serve"); err != nil {
			t.Fatalf("%q: %v", file, err)
		}
		if tr.serve.KeepAlive != want {
			t.Errorf("%q: keep-alive %v, want %v", file, tr.serve.KeepAlive, want)
		}
	}
	path := writeConfig(t, "serve:\n  keep_alive: soon\n")
	tr := newTree(cmdtest.Factory(ios, config.EnvConfig, path))
	if err := cmdtest.Execute(tr.root, "serve"); err == nil || !strings.Contains(err.Error(), path+":2") || !strings.Contains(err.Error(), "want a duration") {
		t.Fatalf("a bad keep_alive: %v", err)
	}
	var found bool
	for _, k := range config.Keys {
		found = found || (k.Name == "serve.keep_alive" && serveCmd(tr).Flags().Lookup(k.Flag) != nil)
	}
	if !found {
		t.Fatal("serve.keep_alive is not a key of a flag of drama serve")
	}
}

// serve.api_key_file sets drama serve's --api-key-file: its keys let
// --allow-remote start, and a bad line of the key file is refused naming
// the key file's path and line.
func TestAPIKeyFileSettingApplies(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	keys := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keys, []byte("ops-0123456789abcdef0123 ops admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr := newTree(cmdtest.Factory(ios, config.EnvConfig, writeConfig(t, "serve:\n  api_key_file: "+keys+"\n")))
	if err := cmdtest.Execute(tr.root, "serve", "--addr", "0.0.0.0:8793", "--allow-remote"); err != nil || tr.serve.APIKeyFile != keys {
		t.Fatalf("%v: --api-key-file %q, want %s", err, tr.serve.APIKeyFile, keys)
	}
	if err := os.WriteFile(keys, []byte("ops-0123456789abcdef0123 ops admin\nshort app\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr = newTree(cmdtest.Factory(ios, config.EnvConfig, writeConfig(t, "serve:\n  api_key_file: "+keys+"\n")))
	if err := cmdtest.Execute(tr.root, "serve"); err == nil || !strings.Contains(err.Error(), keys+":2: the key is 5 characters") {
		t.Fatalf("a bad key file named by the config file: %v", err)
	}
}
