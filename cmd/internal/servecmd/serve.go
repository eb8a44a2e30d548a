// Package servecmd implements `drama serve`: its flags read into serve.Run's
// Config, its logs, its record, and the advice its errors need.
package servecmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/httpapi/apikey"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/pool"
	"github.com/drama-tts/drama/engine/serve"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/store"
	"github.com/drama-tts/drama/voices/transcribe"
)

// DefaultAddr is where drama serve listens unless told otherwise.
const DefaultAddr = serverec.DefaultAddr

// DefaultMaxConns is --max-conns's default: far above the clients a host
// serves at once, far below its file descriptors.
const DefaultMaxConns = serve.DefaultMaxConns

// Options are the inputs of `drama serve`.
type Options struct {
	F            *cmdutil.Factory
	Engine       string // cuda, metal or a plugin binary's path
	Addr         string
	AllowRemote  bool
	MaxQueue     int
	QueueTimeout time.Duration
	// ReadyWait is how long a speech request that finds no engine ready
	// waits for one before its 503.
	ReadyWait    time.Duration
	PluginDir    string
	EngineBin    string
	AllowEngine  bool // start an engine binary whose sha256 differs from the root's record
	VoicesDir    string
	DefaultVoice string
	MaxFrames    int
	LongForm     bool
	// VoiceStore is the directory of cloned voices, shared by the drama
	// serve behind one balancer (empty: <root>/voices); VoiceStoreRescan
	// the period it is rescanned where inotify cannot see other hosts'
	// changes, and voiceStoreNoNotify does without inotify (rescans
	// alone, for measuring them).
	VoiceStore         string
	VoiceStoreRescan   time.Duration
	voiceStoreNoNotify bool
	// LongFormChars and LongFormHistory are the long-form segment length
	// and the segments of history each is conditioned on.
	LongFormChars   int
	LongFormHistory int
	// PrefixCache is how many voice prefixes the engine keeps cached.
	PrefixCache int
	// Verify is the check of the variant's files before the engine
	// starts: size, sha256 or none.
	Verify string
	// RequireQualified answers speech 503 unless drama qualify's marker
	// holds for this host.
	RequireQualified bool
	qualification    httpapi.QualificationSource
	// GPULock is a lock file the GPU jobs of the host share: drama serve
	// holds it while its engine is loaded, waiting at most GPULockWait.
	GPULock     string
	GPULockWait time.Duration
	// KeepAlive is how long the engine stays loaded without a request
	// before it is unloaded (its memory given back; the next request
	// loads it and waits): negative keeps it loaded for as long as drama
	// serve runs, 0 unloads it when each request ends.
	KeepAlive    time.Duration
	NoGuidance   bool
	Admission    string
	ReadyTimeout time.Duration
	Grace        time.Duration
	MaxPrompt    int // prompt tokens allowed; 0: from the checkpoint's config.json
	StallTimeout time.Duration
	AllowOrigins []string
	AllowHosts   []string
	MaxClipBytes int64
	MaxUpload    int64
	CloneWait    time.Duration
	// UploadTimeout bounds the time a whole upload (POST /v1/voices, POST
	// /ui/clip-check) may take; it is received before it waits for its slot.
	UploadTimeout time.Duration
	// MaxConns bounds the connections open at once; at the bound the one
	// idle longest gives way to a new client (internal/connlimit).
	MaxConns int
	// BuiltinVoice names the model's built-in voice; NoBuiltinVoice serves
	// it under no name.
	BuiltinVoice   string
	NoBuiltinVoice bool
	// VoiceAliases are NAME=VOICE mappings (--voice-alias), parsed into
	// aliases by validate.
	VoiceAliases []string
	aliases      map[string]string
	// TranscribeURL names a speech recognition server that transcribes
	// clips sent without their words.
	TranscribeURL string
	LogFile       string
	// GPUs are the GPU indexes to run engines on (--gpus 0,1); empty: one
	// engine on what the environment gives. EnginesPerGPU is a number or
	// "auto".
	GPUs          string
	EnginesPerGPU string
	// Dispatch is the pool's policy (affinity or round-robin) and
	// AffinityWait the longest a request waits for an engine holding its
	// voice while another is idle.
	Dispatch     string
	AffinityWait time.Duration
	nvidiaSMI    string // the nvidia-smi to run (tests); empty: from PATH
	// gpus and perGPU are --gpus and --engines-per-gpu as validate read
	// them (perGPU perGPUAuto: auto; 0, as left by a literal, is 1).
	gpus   []int
	perGPU int
	// Given are the flags of the command line as flag, value pairs, for
	// hints that repeat them.
	Given []string
	// Listening, if set, is called with the bound address once serving
	// (tests).
	Listening func(addr string)

	// APIKeyFile is a file of API keys (KEY [NAME] [SCOPE] a line),
	// re-read on SIGHUP; with DRAMA_API_KEY's key they are the keys every
	// route but /health, /ready and the page's shell needs. NoAuth serves
	// without keys beyond loopback (a proxy in front authenticates).
	APIKeyFile string
	NoAuth     bool
	keys       *apikey.Set
	// catalogClones, when more than 0, is how many clones a catalog
	// engine's catalog holds (tests).
	catalogClones int
	// AllowInlineReferences lets speech requests carry references of
	// their own: without keys any request, with keys those of scope speak.
	AllowInlineReferences bool
}

// serveLong is drama serve's help.
const serveLong = `
Launch the engine plugin for this OS (cuda on Linux, metal on macOS), start
the native engine with the variant's flags, and serve the speech API once it
is ready: POST /v1/audio/speech, GET /v1/models[/{id}], GET|POST /v1/voices,
DELETE /v1/voices/{id}, GET /health, GET /ready, GET /metrics.

Requests are queued first in, first out in front of the engine, which
makes one synthesis at a time (--max-queue, --queue-timeout; with several
engines, one queue feeds them all); a client that accepts no
audio for --stall-timeout is cut. Browser pages of other origins, and Host
names other than the bound address, are refused unless --allow-origin or
--allow-host names them. drama serve binds to
127.0.0.1: the model's licence allows no hosted service without a separate
licence, so another address needs --allow-remote.

API keys: $DRAMA_API_KEY (one key, scope admin) and --api-key-file FILE
(one key a line: KEY [NAME] [SCOPE], scope speak, voices or admin; the
file readable by no other user; re-read on SIGHUP) make every route but
/health, /ready and the page's shell need Authorization: Bearer KEY or
X-Api-Key: KEY (401 without, 403 naming the scope a route needs).
--allow-remote needs a key, or --no-auth when a proxy in front
authenticates every request. References sent inline in a speech request
need a key of scope voices; without keys, --allow-inline-references.

Several engines: --gpus 0,1 runs one engine per GPU (each sees its GPU
alone through CUDA_VISIBLE_DEVICES, with its own process group, port,
runtime file and log under <root>/.drama/run/gpuN-I), --engines-per-gpu N
or auto (as many as fit in each GPU's free memory, read with nvidia-smi)
more per GPU; they start one after another and one queue feeds them all. A
request goes to an idle engine that holds its voice in its prefix cache
(the last --prefix-cache voices it spoke) first, else to any idle engine,
waiting at most --affinity-wait for a busy one that holds it;
--dispatch round-robin ignores voices. A failed engine is restarted alone
while the others serve; GET /ready counts the ready engines and /metrics
has series per engine.

Voices: the engine's voices (--voices), the clones in --voice-store
(default <root>/voices), and the model's built-in voice (the engine's voice
when a request names none) under the name "default" (--builtin-voice,
--no-builtin-voice). OpenAI's voice names (alloy, echo, ...) and any other
name are served once mapped to one of these: --voice-alias alloy=default,
repeated for each name.

Several hosts behind one balancer share their clones through --voice-store
DIR on a file system they all mount (NFS, CephFS, a Kubernetes
ReadWriteMany volume): a clone made or deleted on one host is seen by the
others at once when a request names it, and in their lists within a moment
(inotify) or --voice-store-rescan (network file systems). Two hosts cloning
one id at once: one gets 201, the other 409, nothing is overwritten.

Before the engine starts, the variant's files are checked against its pins
(--verify size, sha256 or none; a mismatch exits 3). GET /v1/models says
whether drama qualify's marker holds for this host, the pins and the engine
binary; --require-qualified answers speech requests 503 until it does.

The default request (no "stream" field, as OpenAI's SDKs send it) is
streamed as the engine makes it; "stream": false and HTTP/1.0 clients get
one exactly sized reply.

--keep-alive D unloads the engine after D without a request and gives its
memory back; the next request loads it again and waits for the load. GET
/ready stays 200 while it is unloaded or loading on demand (a request sent
then is served), its body says "phase": "unloaded" or the load's phase and
"loaded": false; drama status lists each engine as loaded or unloaded.
--keep-alive 0 unloads when each request ends; forever (the default), or a
negative value, keeps the engine loaded.

SIGINT or SIGTERM drains the server: GET /ready answers 503 at once (GET
/health stays 200), queued requests get 503 with Retry-After, the requests
in flight finish within --grace, then it stops accepting, stops the engine
and exits with status 0 once everything is gone.`

// serveExample are drama serve's examples, each of which works as written.
const serveExample = `
$ drama serve --variant nvfp4
$ drama serve --engine-bin ./bin/tensorfold-standin     # no GPU: the stand-in engine
$ drama serve --voice-alias alloy=default                # OpenAI's "alloy" speaks the built-in voice
$ drama serve --engine-bin ./bin/tensorfold-standin --gpus 0,1                     # an engine per GPU, one queue
$ drama serve --engine-bin ./bin/tensorfold-standin --gpus 0 --engines-per-gpu 3   # three engines on GPU 0
$ curl -s --fail localhost:8793/v1/audio/speech -H 'Content-Type: application/json' -d '{"input":"Hello.","stream":false}' -o hello.wav
$ drama serve --keep-alive 10m                           # unload the engine after 10 minutes without a request
$ drama serve --addr 0.0.0.0:8793 --allow-remote --api-key-file keys.txt   # keys.txt: KEY NAME SCOPE a line, chmod 600`

// NewCmd returns `drama serve`.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:     "serve",
		Short:   "Serve an OpenAI-compatible speech API through the engine plugin",
		Long:    strings.TrimSpace(serveLong),
		Example: strings.TrimSpace(serveExample),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			opts.Given = cmdutil.GivenFlags(cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	opts.serverFlags(fl)
	opts.engineFlags(fl)
	opts.enginesFlags(fl)
	opts.voiceFlags(fl)
	_ = cmd.RegisterFlagCompletionFunc("engine", cobra.FixedCompletions([]string{"cuda", "metal"}, cobra.ShellCompDirectiveDefault))
	_ = cmd.RegisterFlagCompletionFunc("verify", cobra.FixedCompletions([]string{"size", "sha256", "none"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("dispatch", cobra.FixedCompletions([]string{string(pool.Affinity), string(pool.RoundRobin)}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("engines-per-gpu", cobra.FixedCompletions([]string{"1", "2", "auto"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("admission", cobra.FixedCompletions([]string{"own", "external", "off"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// serverFlags are the flags of the listener, its keys, guards and limits,
// and of the log.
func (o *Options) serverFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.Addr, "addr", DefaultAddr, "address to listen on")
	fl.BoolVar(&o.AllowRemote, "allow-remote", false, "allow an address other than loopback (see the licence); needs an API key (DRAMA_API_KEY, --api-key-file) or --no-auth")
	fl.StringVar(&o.APIKeyFile, "api-key-file", "", "file of API keys, one a line: KEY [NAME] [SCOPE] (scope speak, voices or admin); not readable by every user; re-read on SIGHUP")
	fl.BoolVar(&o.NoAuth, "no-auth", false, "with --allow-remote, serve without API keys: only when a proxy in front authenticates every request")
	fl.BoolVar(&o.AllowInlineReferences, "allow-inline-references", false, "let speech requests carry their own references (raw codes): without keys any request, with keys those of scope speak too")
	fl.IntVar(&o.MaxQueue, "max-queue", httpapi.DefaultMaxQueue, "requests that may wait for the engine (0: none; a busy engine answers 503 at once)")
	fl.DurationVar(&o.QueueTimeout, "queue-timeout", 5*time.Minute, "longest wait in the queue")
	fl.DurationVar(&o.ReadyWait, "ready-wait", time.Second, "how long a request that finds no engine ready waits for one before its 503 (0: none)")
	fl.DurationVar(&o.Grace, "grace", 10*time.Second, "at SIGTERM, how long the requests in flight may finish (GET /ready answers 503 meanwhile) before they are cut; the engine gets as long to stop")
	fl.DurationVar(&o.StallTimeout, "stall-timeout", httpapi.DefaultStallTimeout, "cut a client that accepts no audio for this long, cancelling its synthesis")
	fl.StringArrayVar(&o.AllowOrigins, "allow-origin", nil, "web origin (e.g. https://app.example) whose pages may call the API, with CORS; repeatable; * for any")
	fl.StringArrayVar(&o.AllowHosts, "allow-host", nil, "another name clients may give in Host (e.g. tts.lan); repeatable; * for any")
	fl.Int64Var(&o.MaxClipBytes, "max-clip-bytes", httpapi.DefaultMaxClipBytes, "largest clip file in POST /v1/voices")
	fl.Int64Var(&o.MaxUpload, "max-upload-bytes", httpapi.DefaultMaxUploadBytes, "largest POST /v1/voices request")
	fl.DurationVar(&o.CloneWait, "clone-wait", httpapi.DefaultCloneWait, "how long a clone waits for the one running before a 429 (0: none)")
	fl.DurationVar(&o.UploadTimeout, "upload-timeout", httpapi.DefaultUploadTimeout, "longest a whole clone or clip-check upload may take before a 408; it is received before it waits for --clone-wait")
	fl.IntVar(&o.MaxConns, "max-conns", DefaultMaxConns, "most connections open at once; at the bound an idle one gives way to a new client, and only when every one is answering a request is a new one refused (503)")
	fl.StringVar(&o.LogFile, "log-file", "", "also write every log record to this file as JSON lines (appended)")
}

// engineFlags are the flags of the engine: its plugin and binary, its
// settings, and the checks before it starts.
func (o *Options) engineFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.Engine, "engine", defaultEngine(), "engine plugin: cuda, metal, or a plugin binary's path")
	fl.StringVar(&o.PluginDir, "plugin-dir", "", "directory searched first for engine plugins")
	fl.StringVar(&o.EngineBin, "engine-bin", "", "native engine binary (default $DRAMA_ENGINE_BIN, else <root>/engine/<binary>, else PATH)")
	fl.BoolVar(&o.AllowEngine, "allow-engine-mismatch", false, "start an engine binary whose sha256 differs from <root>/engine/engine.sha256")
	fl.IntVar(&o.MaxFrames, "max-frames", 0, "frame limit per synthesis (0: the engine's default)")
	fl.BoolVar(&o.LongForm, "long-form", false, "split long texts into segments (CUDA)")
	fl.IntVar(&o.LongFormChars, "long-form-chars", native.DefaultLongFormChars, "with --long-form: the segment length in characters")
	fl.IntVar(&o.LongFormHistory, "long-form-history", native.DefaultLongFormHistory, "with --long-form: earlier segments each segment is conditioned on")
	fl.IntVar(&o.PrefixCache, "prefix-cache", 2, "voice prefixes the engine keeps cached (0: off)")
	fl.StringVar(&o.Verify, "verify", "size", "check the variant's files against its pins before the engine starts: size, sha256 (instant for files unchanged since their last full check) or none")
	fl.BoolVar(&o.RequireQualified, "require-qualified", false, "answer speech requests 503 unless drama qualify's marker holds for this host, the pins and the engine binary")
	fl.BoolVar(&o.NoGuidance, "no-guidance", false, "serve nvfp4 without classifier-free guidance")
	fl.StringVar(&o.Admission, "admission", "own", "memory admission: own, external or off")
	fl.DurationVar(&o.ReadyTimeout, "ready-timeout", 900*time.Second, "deadline for the engine to become ready")
	fl.IntVar(&o.MaxPrompt, "max-prompt-tokens", 0, "longest prompt in tokens (0: the model's context from config.json less a reserve for the reply)")
}

// enginesFlags are the flags of how many engines run, where, for how
// long, and how a request picks one.
func (o *Options) enginesFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.GPULock, "gpu-lock", "", "lock file the GPU jobs of this host share: held while the engine is loaded")
	fl.DurationVar(&o.GPULockWait, "gpu-lock-wait", 2*time.Minute, "how long to wait for --gpu-lock before giving up")
	o.KeepAlive = -1
	fl.Var(keepAliveFlag{&o.KeepAlive}, "keep-alive", "unload the engine after this long without a request (e.g. 10m; 0: after each request; forever: never); the next request loads it")
	fl.StringVar(&o.GPUs, "gpus", "", "GPU indexes to run engines on, e.g. 0,1: each engine sees its GPU alone (CUDA_VISIBLE_DEVICES)")
	fl.StringVar(&o.EnginesPerGPU, "engines-per-gpu", "1", "engines on each GPU of --gpus, or auto: as many as fit in its free memory (nvidia-smi)")
	fl.StringVar(&o.Dispatch, "dispatch", string(pool.Affinity), "how a request picks an engine: affinity (one holding its voice first) or round-robin")
	fl.DurationVar(&o.AffinityWait, "affinity-wait", pool.DefaultAffinityWait, "longest a request waits for a busy engine holding its voice while another is idle (0: none)")
}

// voiceFlags are the flags of the voices served: the engine's, the
// clones' store, the built-in voice's name and the aliases.
func (o *Options) voiceFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.VoicesDir, "voices", "", "directory of voice files the engine serves")
	fl.StringVar(&o.VoiceStore, "voice-store", "", "directory of the cloned voices, on a file system every drama serve behind the balancer shares (default <root>/voices)")
	fl.DurationVar(&o.VoiceStoreRescan, "voice-store-rescan", store.DefaultRescan, "how often the voice store is rescanned where inotify cannot see other hosts' clones and deletes (NFS, CephFS, FUSE)")
	fl.BoolVar(&o.voiceStoreNoNotify, "voice-store-no-notify", false, "rescan the voice store at --voice-store-rescan even where inotify works")
	_ = fl.MarkHidden("voice-store-no-notify") // for measuring rescans
	fl.StringVar(&o.DefaultVoice, "default-voice", "", "voice used when a request names none")
	fl.StringVar(&o.BuiltinVoice, "builtin-voice", httpapi.DefaultBuiltinVoice, "name the model's built-in voice is served under (the engine's voice when a request names none)")
	fl.BoolVar(&o.NoBuiltinVoice, "no-builtin-voice", false, "serve the built-in voice under no name")
	fl.StringArrayVar(&o.VoiceAliases, "voice-alias", nil, "NAME=VOICE: answer requests for NAME (e.g. OpenAI's alloy) with a served voice; repeat for each name")
	fl.StringVar(&o.TranscribeURL, "transcribe-url", "", "OpenAI-compatible speech recognition server (/v1/audio/transcriptions) that transcribes clips sent without their words")
}

func defaultEngine() string {
	if runtime.GOOS == "darwin" {
		return "metal"
	}
	return "cuda"
}

func (o *Options) validate() error {
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		return cmdutil.FlagErrorf("--addr %q: want HOST:PORT, e.g. %s", o.Addr, DefaultAddr)
	}
	if !serve.OnLoopback(o.Addr) && !o.AllowRemote {
		return cmdutil.FlagErrorf("--addr %s is not a loopback address: the Fish Audio Community License allows no hosted service without a separate licence; pass --allow-remote if your use is covered", o.Addr)
	}
	if err := o.loadKeys(); err != nil {
		return err
	}
	switch {
	case o.MaxQueue < 0:
		return cmdutil.FlagErrorf("--max-queue must be 0 or more")
	case o.Admission != "own" && o.Admission != "external" && o.Admission != "off":
		return cmdutil.FlagErrorf("--admission %q: want own, external or off", o.Admission)
	case o.DefaultVoice != "" && o.VoicesDir == "":
		return cmdutil.FlagErrorf("--default-voice %s: the engine has only the voices of --voices DIR: give --voices with the directory that holds %s.json", o.DefaultVoice, o.DefaultVoice)
	case o.MaxFrames < 0:
		return cmdutil.FlagErrorf("--max-frames must be 0 or more")
	case o.Verify != "size" && o.Verify != "sha256" && o.Verify != "none":
		return cmdutil.FlagErrorf("--verify %q: want size, sha256 or none", o.Verify)
	case o.LongFormChars < 1:
		return cmdutil.FlagErrorf("--long-form-chars must be 1 or more (default %d)", native.DefaultLongFormChars)
	case o.LongFormHistory < 0:
		return cmdutil.FlagErrorf("--long-form-history must be 0 or more (default %d)", native.DefaultLongFormHistory)
	case o.GPULockWait < 0:
		return cmdutil.FlagErrorf("--gpu-lock-wait must be 0 or more")
	case o.PrefixCache < 0:
		return cmdutil.FlagErrorf("--prefix-cache must be 0 (off) or more")
	case o.MaxPrompt < 0:
		return cmdutil.FlagErrorf("--max-prompt-tokens must be 0 or more")
	case o.StallTimeout <= 0:
		return cmdutil.FlagErrorf("--stall-timeout must be more than 0, e.g. 10s")
	case o.MaxClipBytes <= 0 || o.MaxUpload <= 0:
		return cmdutil.FlagErrorf("--max-clip-bytes and --max-upload-bytes must be more than 0")
	case o.MaxClipBytes > o.MaxUpload:
		return cmdutil.FlagErrorf("--max-clip-bytes %d is over --max-upload-bytes %d: raise --max-upload-bytes too", o.MaxClipBytes, o.MaxUpload)
	case o.CloneWait < 0:
		return cmdutil.FlagErrorf("--clone-wait must be 0 or more")
	case o.UploadTimeout <= 0:
		return cmdutil.FlagErrorf("--upload-timeout must be more than 0, e.g. 2m")
	case o.MaxConns < 1:
		return cmdutil.FlagErrorf("--max-conns %d: give the number of connections to hold open at once, at least 1 (default %d)", o.MaxConns, DefaultMaxConns)
	case o.AffinityWait < 0:
		return cmdutil.FlagErrorf("--affinity-wait must be 0 or more, e.g. 250ms")
	case o.VoiceStoreRescan <= 0:
		return cmdutil.FlagErrorf("--voice-store-rescan must be more than 0, e.g. %s", store.DefaultRescan)
	case o.ReadyWait < 0:
		return cmdutil.FlagErrorf("--ready-wait must be 0 or more, e.g. 1s")
	case o.Dispatch != string(pool.Affinity) && o.Dispatch != string(pool.RoundRobin):
		return cmdutil.FlagErrorf("--dispatch %q: want %s or %s", o.Dispatch, pool.Affinity, pool.RoundRobin)
	}
	if err := o.checkEngines(); err != nil {
		return err
	}
	if o.TranscribeURL != "" {
		if _, err := transcribe.Endpoint(o.TranscribeURL); err != nil {
			return cmdutil.FlagErrorf("--transcribe-url: %v", err)
		}
	}
	for _, origin := range o.AllowOrigins {
		if err := checkOrigin(origin); err != nil {
			return err
		}
	}
	return o.parseVoiceNames()
}

// loadKeys reads the API keys (DRAMA_API_KEY, --api-key-file) and checks
// them against --no-auth and --allow-remote: serving beyond loopback needs
// a key, or --no-auth to say that a proxy in front checks every request.
func (o *Options) loadKeys() error {
	env := o.F.Getenv(apikey.EnvKey)
	if o.NoAuth && (env != "" || o.APIKeyFile != "") {
		given := "$" + apikey.EnvKey
		if o.APIKeyFile != "" {
			given = "--api-key-file " + o.APIKeyFile
		}
		return cmdutil.FlagErrorf("--no-auth serves without API keys, and %s gives some: drop --no-auth to require them, or the keys to serve without", given)
	}
	keys, err := apikey.Load(env, o.APIKeyFile)
	if err != nil {
		return cmdutil.FlagErrorf("API keys: %v", err)
	}
	o.keys = keys
	if o.AllowRemote && keys == nil && !o.NoAuth {
		return cmdutil.FlagErrorf("--allow-remote serves beyond loopback, and no API key is set: give one with %s=KEY (a key of scope admin) or --api-key-file FILE (lines KEY NAME SCOPE), "+
			"or pass --no-auth if a proxy in front authenticates every request", apikey.EnvKey)
	}
	return nil
}

// builtinVoice is the built-in voice's served name, "" for none.
func (o *Options) builtinVoice() string {
	if o.NoBuiltinVoice {
		return ""
	}
	return o.BuiltinVoice
}

// parseVoiceNames checks --builtin-voice and every --voice-alias.
func (o *Options) parseVoiceNames() error {
	builtin := o.builtinVoice()
	if builtin != "" {
		if err := voices.CheckID(builtin); err != nil {
			return cmdutil.FlagErrorf("--builtin-voice %s: %v (or --no-builtin-voice to serve it under no name)", builtin, err)
		}
	}
	o.aliases = map[string]string{}
	for _, a := range o.VoiceAliases {
		name, target, ok := strings.Cut(a, "=")
		switch {
		case !ok || name == "" || target == "":
			return cmdutil.FlagErrorf("--voice-alias %s: want NAME=VOICE, e.g. --voice-alias alloy=%s", a, cmp.Or(builtin, "narrator"))
		case len(name) > 64 || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			return cmdutil.FlagErrorf("--voice-alias %s: a name is 1 to 64 characters without spaces or control characters", a)
		case o.aliases[name] != "":
			return cmdutil.FlagErrorf("--voice-alias %s given twice (also =%s): give each name once", name, o.aliases[name])
		case name == builtin:
			return cmdutil.FlagErrorf("--voice-alias %s: %s is the built-in voice's name; pick another name or --builtin-voice", a, name)
		}
		if err := voices.CheckID(target); err != nil {
			return cmdutil.FlagErrorf("--voice-alias %s: %v", a, err)
		}
		o.aliases[name] = target
	}
	for name, target := range o.aliases {
		if _, ok := o.aliases[target]; ok {
			return cmdutil.FlagErrorf("--voice-alias %s=%s: %s is itself an alias; map %s to the voice %s stands for (%s)", name, target, target, name, target, o.aliases[target])
		}
	}
	return nil
}

func run(ctx context.Context, opts *Options) error {
	f := opts.F
	root, err := f.Root()
	if err != nil {
		return err
	}
	if opts.perGPU == perGPUAuto {
		// before the file checks and --gpu-lock, which may be waited for
		if _, _, err := checkAuto(f, opts, f.Global.Variant); err != nil {
			return err
		}
	}
	plugin, err := cmdutil.FindPlugin(f, opts.PluginDir, opts.Engine, root)
	if err != nil {
		return err
	}
	req, err := startRequest(f, opts, root)
	if err != nil {
		return err
	}
	standIn := cmdutil.IsStandIn(req.EngineBin)
	if !standIn {
		if err := cmdutil.RequireInstalled(f, f.Global.Variant); err != nil {
			return err
		}
	}
	if err := checkVoices(opts); err != nil {
		return err
	}
	if err := checkNotServing(f, root); err != nil {
		return err
	}
	logs, err := newLogs(f, opts.LogFile)
	if err != nil {
		return err
	}
	defer logs.Close()
	logger := logs.logger
	if !standIn || cmdutil.HasFiles(req.ModelDir) {
		if err := verifyInstall(ctx, opts, root, logger); err != nil {
			return err
		}
	}
	q := newQualification(ctx, opts, req)
	opts.qualification = q
	q.Log(ctx, logger, opts.RequireQualified)
	unlock, err := takeGPULock(ctx, opts, logger)
	if err != nil {
		return err
	}
	defer unlock()
	if standIn && req.Admission == engine.AdmissionOwn && !slices.Contains(opts.Given, "--admission") {
		req.Admission = engine.AdmissionOff
		logger.Info("the engine binary is the stand-in: it loads no model, so memory admission is off", "engine_bin", req.EngineBin)
	}
	return serveEngines(ctx, opts, logs, plugin, req, root)
}

// admissionHint adds to a refused memory admission the flags that hand the
// decision elsewhere, with the user's other flags.
func admissionHint(f *cmdutil.Factory, opts *Options, err error) error {
	if !strings.Contains(err.Error(), native.ErrMemory.Error()) {
		return err
	}
	return fmt.Errorf("%w\nto let an outer scheduler decide: %s\nto skip the check:              %s", err,
		f.Suggest(append([]string{"serve"}, cmdutil.WithFlag(opts.Given, "--admission", "external")...)...),
		f.Suggest(append([]string{"serve"}, cmdutil.WithFlag(opts.Given, "--admission", "off")...)...))
}

// startRequest describes the install and the engine's settings.
func startRequest(f *cmdutil.Factory, opts *Options, root string) (engine.StartRequest, error) {
	variant := f.Global.Variant
	bin, err := engineBinary(f, opts, root)
	if err != nil {
		return engine.StartRequest{}, err
	}
	sum, err := cmdutil.EngineRecordFor(root, bin)
	if err != nil {
		return engine.StartRequest{}, err
	}
	req := engine.StartRequest{
		Install: engine.Install{Root: root, Variant: variant, ModelDir: filepath.Join(root, variant), EngineBin: bin,
			EngineSHA256: sum, AllowEngineMismatch: opts.AllowEngine},
		VoicesDir: opts.VoicesDir, DefaultVoice: opts.DefaultVoice, MaxFrames: opts.MaxFrames, LongForm: opts.LongForm,
		NoGuidance: opts.NoGuidance, Admission: engine.Admission(opts.Admission), ReadyTimeout: opts.ReadyTimeout,
		RuntimeDir: serverec.RuntimeDir(root),
	}
	serve.Tuning{LongForm: opts.LongForm, LongFormChars: opts.LongFormChars, LongFormHistory: opts.LongFormHistory, PrefixCache: opts.PrefixCache}.Apply(&req)
	return req, nil
}

func engineBinary(f *cmdutil.Factory, opts *Options, root string) (string, error) {
	plugin := opts.Engine
	if cmdutil.EngineBinaries[plugin] == "" {
		plugin = defaultEngine() // --engine is a path: assume this OS's engine
	}
	bin, err := cmdutil.EngineBinary(f, opts.EngineBin, plugin, root)
	if err == nil && bin == "" {
		err = fmt.Errorf("no native engine binary %s in %s or on the PATH: install it there or pass --engine-bin; to try drama without a GPU: %s",
			cmdutil.EngineBinaries[plugin], filepath.Join(root, "engine"),
			f.Suggest(append([]string{"serve"}, cmdutil.WithFlag(opts.Given, "--engine-bin", "bin/tensorfold-standin")...)...))
	}
	return bin, err
}

// serveEngines plans the engines and runs them behind drama serve's API until
// ctx ends (serve.Run), with drama serve's record written while it
// listens; the errors get the advice that repeats the user's flags.
func serveEngines(ctx context.Context, opts *Options, logs *logs, pluginPath string, req engine.StartRequest, root string) error {
	f := opts.F
	plan, err := planEngines(ctx, f, opts, req)
	if err != nil {
		return err
	}
	cfg := opts.config(logs, req.Install)
	cfg.Engines, cfg.Plugin, cfg.PluginLog = plan, pluginPath, logs.hclog()
	cfg.OnListen = func(addr string) func() {
		logKeys(opts, logs.logger)
		if _, err := serverec.Write(root, serveRecord(opts, plan, addr, root)); err != nil {
			logs.logger.Warn("no serve record: drama status will not list this server", "err", err)
		}
		return func() { serverec.Remove(root, os.Getpid()) }
	}
	err = serve.Run(ctx, cfg)
	var le *serve.ListenError
	var se *serve.StartError
	switch {
	case errors.As(err, &le):
		return fmt.Errorf("%w: pick another --addr (%s)", err,
			f.Suggest(append([]string{"serve"}, cmdutil.WithFlag(opts.Given, "--addr", "127.0.0.1:8794")...)...))
	case errors.As(err, &se):
		return cmdutil.EngineError(admissionHint(f, opts, err))
	}
	return err
}

// config is what serve.Run takes of the flags: every setting but the
// engines, the plugin and the hooks, which serve adds.
func (o *Options) config(logs *logs, install engine.Install) serve.Config {
	cloneWait := o.CloneWait
	if cloneWait == 0 {
		cloneWait = -1 // --clone-wait 0: none
	}
	cfg := serve.Config{
		Install: install, MaxPrompt: o.MaxPrompt, InstallReady: installReady(o.F, install),
		KeepAlive: o.KeepAlive, Grace: o.Grace, Pool: dispatchOptions(o), Addr: o.Addr, MaxConns: o.MaxConns,
		VoicesDir: o.VoicesDir, VoiceStore: o.VoiceStore, VoiceStoreRescan: o.VoiceStoreRescan, VoiceStoreNoNotify: o.voiceStoreNoNotify,
		TranscribeURL: o.TranscribeURL, CatalogClones: o.catalogClones,
		Log: logs.logger, EngineLog: logs.from(sourceEngine), AccessLog: logs.from(sourceAccess),
		OnReady: o.Listening,
		API: httpapi.Config{
			Model: "drama-3-" + o.F.Global.Variant, QueueTimeout: o.QueueTimeout, ReadyWait: o.ReadyWait,
			AllowHosts: o.AllowHosts, AllowOrigins: o.AllowOrigins, StallTimeout: o.StallTimeout,
			Uploads:      httpapi.UploadLimits{MaxClipBytes: o.MaxClipBytes, MaxRequestBytes: o.MaxUpload, Wait: cloneWait, Timeout: o.UploadTimeout},
			BuiltinVoice: o.builtinVoice(), VoiceAliases: o.aliases, Qualification: o.qualification, RequireQualified: o.RequireQualified,
			Keys: o.keys, AllowInlineReferences: o.AllowInlineReferences,
		},
	}
	if o.APIKeyFile != "" {
		cfg.KeyFile = o.APIKeyFile
		cfg.ReloadKeys = func() (*apikey.Set, error) { return apikey.Load(o.F.Getenv(apikey.EnvKey), o.APIKeyFile) }
	}
	return cfg
}

// serveRecord is the record drama status reads of this drama serve: each
// engine with its native log, the first one's also under EngineLog for
// readers older than several engines.
func serveRecord(opts *Options, plan []serve.Planned, addr, root string) serverec.Record {
	name := engineName(opts.Engine)
	rec := serverec.Record{PID: os.Getpid(), Addr: addr, Variant: opts.F.Global.Variant, Root: root, Engine: name,
		Started: time.Now(), LogFile: opts.LogFile, KeepAlive: keepAliveFlag{&opts.KeepAlive}.String(), Grace: opts.Grace.String()}
	for _, pe := range plan {
		rec.Engines = append(rec.Engines, serverec.EngineLog{Name: pe.Name, Log: native.LogFile(pe.Req.RuntimeDir, name)})
	}
	if len(rec.Engines) > 0 {
		rec.EngineLog = rec.Engines[0].Log
	}
	return rec
}

// engineName is the plugin's name for a --engine value (a name or a path).
func engineName(e string) string {
	if cmdutil.EngineBinaries[e] != "" {
		return e
	}
	return strings.TrimPrefix(filepath.Base(e), "drama-engine-")
}

// checkOrigin checks an --allow-origin value: "*" or scheme://host[:port].
func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return cmdutil.FlagErrorf("--allow-origin %q: want scheme://host[:port] as a browser sends it in Origin, e.g. https://app.example", o)
	}
	return nil
}

// installReady says whether the install's model directory, which the
// encoder reads codec.pth from, has the variant's files.
func installReady(f *cmdutil.Factory, in engine.Install) func() error {
	return func() error {
		if in.ModelDir == "" || cmdutil.HasFiles(in.ModelDir) {
			return nil
		}
		return &cmdutil.NotInstalledError{Variant: in.Variant, Root: in.Root, Fetch: f.Suggest("fetch", "--variant", in.Variant)}
	}
}
