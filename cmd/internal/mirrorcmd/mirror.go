// Package mirrorcmd holds drama mirror serve.
package mirrorcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/internal/connlimit"
	"github.com/drama-tts/drama/internal/safetext"
	"github.com/drama-tts/drama/pins/hub"
	"github.com/drama-tts/drama/pins/hub/mirror"
)

// NewCmd returns the drama mirror command group.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mirror <command>",
		Short: "Serve local checkpoints with the Hugging Face Hub's routes",
	}
	cmd.AddCommand(NewCmdServe(f, nil))
	return cmd
}

// ServeOptions are drama mirror serve's flags.
type ServeOptions struct {
	F           *cmdutil.Factory
	Dir         string
	Cache       bool
	Addr        string
	CDNAddr     string         // the CDN listener's address ("": --addr's host, any free port)
	Token       string         // required as a bearer token on Hub routes ("": any or none)
	Faults      []mirror.Fault // --fault, parsed
	URLTTL      time.Duration
	BytesPerSec int64
	LFSMinSize  int64
	PageSize    int
	AllowHosts  []string // more names a request's Host may give (--allow-host; "*": any)
	MaxConns    int      // open connections over both listeners (--max-conns)
	// ReadHeaderTimeout and IdleTimeout bound how long a connection may
	// take to send a request's headers and sit idle between requests
	// (0: DefaultReadHeaderTimeout, DefaultIdleTimeout).
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	Ready             func(addr string) // called once listening (tests)
}

// The limits of drama mirror serve's connections. Nothing bounds how long
// a response takes: a download of tens of gigabytes runs for as long as
// its bytes flow.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxConns          = 512
)

// NewCmdServe returns drama mirror serve.
func NewCmdServe(f *cmdutil.Factory, runF func(context.Context, *ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{F: f}
	var faults []string
	cmd := &cobra.Command{
		Use:   "serve [DIR | --cache]",
		Short: "Serve a directory of repositories or the HF cache as a Hub mirror",
		Long: `Serve local files with the routes and headers of the Hugging Face Hub that
drama, huggingface_hub and @huggingface/hub use: resolve and raw (HEAD, GET,
Range, 206, 416, If-None-Match, X-Repo-Commit, X-Linked-Etag, X-Linked-Size),
the model, revision, tree (Link pagination), paths-info, refs and commits
APIs, with the Hub's X-Error-Code on errors.

LFS files (weights, and files of --lfs-min-size or more) are served as the
Hub serves them: the resolve answers 302 with a signed, expiring URL on a
second listener, the CDN (--cdn-addr), which needs no token.

DIR holds <owner>/<name>/<commit>/<path> and optionally
<owner>/<name>/refs/<branch>; --cache serves the Hugging Face cache
(HF_HUB_CACHE). Point other hosts at it with HF_ENDPOINT or drama fetch
--endpoint. It binds 127.0.0.1 unless --addr says otherwise.

--token makes every Hub route require "Authorization: Bearer TOKEN" (the
CDN's signed URLs never do); without it any token or none is accepted, and
a mirror listening beyond loopback says so on stderr.

Only files inside DIR (or the cache) are served: a symbolic link is
followed when it is relative and stays inside, and one that leads out is
neither listed nor served. A request whose Host header names neither the
listening address, nor localhost for a loopback one, nor an --allow-host
name gets 421 (a web page cannot reach the mirror by pointing its own name
at it). At most --max-conns connections are open over both listeners, each
with 10 s to send a request's headers and 2 min idle between requests; at
the bound the connection idle longest gives way to a new one. No timeout
cuts a response whose bytes keep flowing.

--fault injects failures into data responses, for testing clients:
KIND[@AFTER][xTIMES] with KIND one of drop, full200, badrange, 416, 429, 503,
stall, flip, expire, short, slow.`,
		Example: `  $ drama mirror serve --cache --addr 0.0.0.0:8080 --cdn-addr 0.0.0.0:8081
  $ drama mirror serve ./repos --fault drop@3x2 --fault 503x4`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			if (opts.Dir == "") == !opts.Cache {
				return cmdutil.FlagErrorf("give either DIR or --cache")
			}
			if opts.MaxConns < 1 {
				return cmdutil.FlagErrorf("--max-conns %d: give the number of connections to hold open at once, at least 1 (default %d)", opts.MaxConns, DefaultMaxConns)
			}
			opts.Faults = nil
			for _, s := range faults {
				ft, err := mirror.ParseFault(s)
				if err != nil {
					return cmdutil.FlagErrorf("--fault: %w", err)
				}
				opts.Faults = append(opts.Faults, ft)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runServe(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Cache, "cache", false, "serve the Hugging Face cache ($HF_HUB_CACHE, else $HF_HOME/hub)")
	fl.StringVar(&opts.Addr, "addr", "127.0.0.1:8080", "address to listen on")
	fl.StringVar(&opts.CDNAddr, "cdn-addr", "", "address of the CDN listener for LFS content (default: --addr's host, a free port)")
	fl.StringVar(&opts.Token, "token", "", "require this bearer token on Hub routes (default: accept any or none)")
	fl.StringArrayVar(&faults, "fault", nil, "inject a fault into data responses: KIND[@AFTER][xTIMES] (repeatable)")
	fl.DurationVar(&opts.URLTTL, "url-ttl", mirror.DefaultURLTTL, "lifetime of signed redirect URLs")
	fl.Int64Var(&opts.BytesPerSec, "rate", 0, "limit each data response to this many bytes per second (0: none)")
	fl.Int64Var(&opts.LFSMinSize, "lfs-min-size", mirror.DefaultLFSMinSize, "files this large or larger are served as LFS files")
	fl.IntVar(&opts.PageSize, "page-size", mirror.DefaultPageSize, "tree API entries per page")
	fl.StringArrayVar(&opts.AllowHosts, "allow-host", nil, "another name clients may give in Host (e.g. mirror.lan); repeatable; * for any")
	fl.IntVar(&opts.MaxConns, "max-conns", DefaultMaxConns, "most connections open at once over both listeners")
	return cmd
}

func runServe(ctx context.Context, opts *ServeOptions) error {
	f := opts.F
	var src mirror.Source = mirror.DirSource{Dir: opts.Dir}
	dir := opts.Dir
	if opts.Cache {
		dir = hub.HubCacheDir(f.Getenv)
		src = mirror.CacheSource{Dir: dir}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("mirror: %s is not a directory: pass a folder of <owner>/<name>/<commit>/ trees, or --cache for the Hugging Face cache (HF_HUB_CACHE)", dir)
	}
	s := &mirror.Server{Source: src, URLTTL: opts.URLTTL, BytesPerSec: opts.BytesPerSec, LFSMinSize: opts.LFSMinSize, PageSize: opts.PageSize, Token: opts.Token}
	s.SetFaults(opts.Faults)
	if !f.Global.Quiet && !f.Global.JSON {
		// a log line names what a client asked for: outside text
		s.Log = func(format string, args ...any) {
			fmt.Fprintln(f.IO.ErrOut, safetext.Lines(fmt.Sprintf(format, args...)))
		}
	}
	cdnAddr := opts.CDNAddr
	if cdnAddr == "" {
		host, _, err := net.SplitHostPort(opts.Addr)
		if err != nil {
			return cmdutil.FlagErrorf("--addr %q: %v: give HOST:PORT, e.g. --addr 127.0.0.1:8080", opts.Addr, err)
		}
		cdnAddr = net.JoinHostPort(host, "0")
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("mirror: --addr %s: %w", opts.Addr, err)
	}
	cdnLn, err := net.Listen("tcp", cdnAddr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("mirror: --cdn-addr %s: %w", cdnAddr, err)
	}
	s.CDNURL = "http://" + cdnLn.Addr().String()
	return serve(ctx, f, s, ln, cdnLn, dir, opts)
}

func serve(ctx context.Context, f *cmdutil.Factory, s *mirror.Server, ln, cdnLn net.Listener, dir string, opts *ServeOptions) error {
	addr := ln.Addr().String()
	if f.Global.JSON {
		_ = cmdutil.WriteJSON(f.IO.Out, map[string]string{"event": "listening", "endpoint": "http://" + addr, "cdn": s.CDNURL, "dir": dir})
	} else {
		fmt.Fprintf(f.IO.Out, "http://%s\n", addr)
	}
	f.Infof("serving %s at http://%s (set HF_ENDPOINT=http://%s on clients), LFS content from %s", dir, addr, addr, s.CDNURL)
	if s.Token == "" {
		for _, l := range []net.Listener{ln, cdnLn} {
			if !loopback(l.Addr()) {
				f.Warnf("listening on %s, beyond loopback, without --token: every host that reaches it can read all of %s; add --token TOKEN (clients send it as HF_TOKEN), or keep --addr and --cdn-addr on 127.0.0.1",
					l.Addr(), dir)
				break
			}
		}
	}
	if opts.Ready != nil {
		opts.Ready(addr)
	}
	limit := connlimit.New(cmp.Or(opts.MaxConns, DefaultMaxConns))
	httpServer := func(h http.Handler) *http.Server {
		return &http.Server{Handler: h,
			ReadHeaderTimeout: cmp.Or(opts.ReadHeaderTimeout, DefaultReadHeaderTimeout),
			IdleTimeout:       cmp.Or(opts.IdleTimeout, DefaultIdleTimeout),
			MaxHeaderBytes:    64 << 10,
		}
	}
	srv := httpServer(mirror.Guard(addr, opts.AllowHosts, s))
	cdn := httpServer(mirror.Guard(cdnLn.Addr().String(), opts.AllowHosts, s.CDN()))
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = cdn.Shutdown(sctx)
		_ = srv.Shutdown(sctx)
	})
	defer stop()
	cdnDone := make(chan error, 1)
	go func() { cdnDone <- limit.Serve(cdn, cdnLn) }()
	err := limit.Serve(srv, ln)
	_ = cdn.Close()
	cerr := <-cdnDone
	for _, e := range []error{err, cerr} {
		if e != nil && !errors.Is(e, http.ErrServerClosed) {
			return fmt.Errorf("mirror: %w", e)
		}
	}
	return nil // stopped by SIGINT or SIGTERM: a server's normal end, exit status 0
}

// loopback reports whether a listener's address is a loopback one.
func loopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
