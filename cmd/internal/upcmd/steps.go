package upcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/hubaccess"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/engine/build"
	"github.com/drama-tts/drama/engine/qualify"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

// step is one step of drama up: skip says why it is not needed ("" when it
// is), run takes it and says what it did.
type step struct {
	name string
	skip func(ctx context.Context) (string, error)
	run  func(ctx context.Context) (string, error)
}

func (u *up) steps() []step {
	return []step{
		{"licence", u.licenceDone, u.acceptLicence},
		{"fetch", u.fetchDone, u.fetch},
		{"verify", u.verifyDone, u.verify},
		{"engine", u.engineDone, u.installEngine},
		{"qualify", u.qualifyDone, u.qualify},
		{"serve", func(context.Context) (string, error) { return "", nil }, u.serve},
	}
}

func (u *up) licenceDone(context.Context) (string, error) {
	a, err := hubaccess.Accepted(u.root, u.p)
	if err != nil || a == nil {
		return "", err
	}
	return fmt.Sprintf("%s accepted by %s on %s", a.License, a.User, a.Time.Format(time.DateOnly)), nil
}

func (u *up) acceptLicence(context.Context) (string, error) {
	if err := hubaccess.AcceptLicense(u.f, u.root, u.p, u.opts.AcceptLicense); err != nil {
		if strings.Contains(err.Error(), "--accept-license") {
			return "", fmt.Errorf("licence not accepted: read it at %s, then run %s", licenceURL(u.p),
				u.f.Suggest(append([]string{"up"}, cmdutil.WithFlag(u.opts.Given, "--accept-license", "true")...)...))
		}
		return "", err
	}
	return u.p.License + " accepted", nil
}

func licenceURL(p *pins.Pins) string {
	if p.LicenseURL != "" {
		return p.LicenseURL
	}
	return "https://huggingface.co/" + p.Repo
}

// present counts the pinned files on disk with their pinned size, and
// their bytes.
func present(dir string, p *pins.Pins) (n int, bytes int64) {
	for _, f := range p.Files {
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err == nil && fi.Mode().IsRegular() && fi.Size() == f.Size {
			n, bytes = n+1, bytes+f.Size
		}
	}
	return n, bytes
}

func (u *up) fetchDone(context.Context) (string, error) {
	if !u.p.Complete() {
		return "", nil
	}
	if _, err := os.Stat(filepath.Join(u.dir, pins.LockFileName)); err != nil {
		return "", nil
	}
	if n, bytes := present(u.dir, u.p); n == len(u.p.Files) {
		return fmt.Sprintf("every pinned file is in %s (%d files, %s)", u.dir, n, cmdutil.HumanBytes(bytes)), nil
	}
	return "", nil
}

// fetch downloads what is missing, as drama fetch does: verified as it
// arrives, resumed where it stopped, linked into <root>/<variant>, with
// the lock file written last.
func (u *up) fetch(ctx context.Context) (string, error) {
	e := u.hub
	var prog cmdutil.Progress
	var moved, kept int64
	var mu sync.Mutex
	event := func(ev hub.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Kind {
		case hub.EventPresent, hub.EventShared:
			prog.Skip(ev.Size)
			kept += ev.Size
		case hub.EventPlan:
			prog.Skip(ev.Bytes)
			kept += ev.Bytes
		case hub.EventRetry, hub.EventRestart:
			u.rep.info("fetch", fmt.Sprintf("%s: %s: %s", ev.Kind, ev.Path, ev.Error))
		}
	}
	in := &hub.Install{
		Fetcher: hub.Fetcher{Client: e.Client, Cache: e.Cache, Offline: e.Offline, FlockWait: time.Minute,
			Download: hub.DownloadOptions{Workers: hub.DefaultWorkers, ChunkSize: hub.DefaultChunkSize, IdleTimeout: hub.DefaultIdleTimeout,
				Progress: func(_ string, n int64) {
					prog.Add(n)
					mu.Lock()
					moved += n
					mu.Unlock()
				}, Event: event}},
		Root: u.root, Variant: u.f.Global.Variant, Endpoint: e.Endpoint,
		Pins: pins.LoadOptions{File: u.opts.PinsFile, CheckVariant: u.opts.VariantSet, For: pins.ForFetch},
		Warn: func(err error) { u.f.Warnf("%v", err) },
		Begin: func(s hub.Step, p *pins.Pins) {
			switch s {
			case hub.StepListing:
				u.rep.info("fetch", fmt.Sprintf("pins for %s have no digests yet: reading the listing of %s@%s", p.Variant, p.Repo, p.Revision))
			case hub.StepFetch:
				prog = u.rep.progress("fetch "+p.Variant, p.TotalBytes())
			case hub.StepPlace:
				prog.Finish()
			}
		},
	}
	res, err := in.Run(ctx)
	if err != nil {
		if ie := (*hub.InstallError)(nil); errors.As(err, &ie) && ie.Step == hub.StepFetch {
			prog.Finish()
		}
		return "", e.InstallAdvice(err, u.opts.CommandLine(u.f), func(string) string { return "run " + u.opts.resume() + " online once" })
	}
	u.p = res.Pins
	return fmt.Sprintf("%d files in %s: %s downloaded, %s already there", len(res.Files), res.Dir,
		cmdutil.HumanBytes(moved), cmdutil.HumanBytes(kept)), nil
}

func (u *up) verifyDone(context.Context) (string, error) {
	if u.p.Complete() && pins.StateOf(u.dir, u.p).Level == pins.LevelSHA256 {
		return "the verified-state record vouches for every file by sha256", nil
	}
	return "", nil
}

// verify hashes what the verified-state record does not vouch for.
func (u *up) verify(ctx context.Context) (string, error) {
	prog := u.rep.progress("verify "+u.p.Variant, u.p.TotalBytes())
	rep, err := pins.Verify(ctx, u.dir, u.p, pins.VerifyOptions{Level: pins.LevelSHA256, TrustRecord: true, Progress: prog.Add})
	prog.Finish()
	if err != nil {
		return "", cmdutil.PinsAdvice(u.f, err, u.p, u.opts.PinsFile)
	}
	if !rep.OK() {
		var bad []string
		for _, r := range rep.Files {
			if r.Status != pins.StatusOK {
				bad = append(bad, r.Path+" ("+string(r.Status)+")")
			}
		}
		err := fmt.Errorf("%d of %d files of %s do not match the pins: %s: %s", len(bad), len(rep.Files), u.p.Variant,
			strings.Join(bad, ", "), cmdutil.RepairHint(u.f, u.p, u.opts.PinsFile, u.dir))
		if rep.Mismatched() {
			err = cmdutil.MismatchError(err)
		}
		return "", err
	}
	vouched := 0
	for _, r := range rep.Files {
		if r.FromRecord {
			vouched++
		}
	}
	return fmt.Sprintf("%d files by sha256 (%s hashed, %d vouched for by the record)", len(rep.Files), cmdutil.HumanBytes(rep.HashedBytes), vouched), nil
}

// plugin is the engine plugin drama serve will run.
func (u *up) plugin() string {
	if cmdutil.EngineBinaries[u.opts.Serve.Engine] != "" {
		return u.opts.Serve.Engine
	}
	return u.p.Engine
}

func (u *up) engineDone(context.Context) (string, error) {
	bin, err := cmdutil.EngineBinary(u.f, u.opts.Serve.EngineBin, u.plugin(), u.root)
	if err != nil || bin == "" {
		return "", err
	}
	dir := build.Dir(u.root, u.p.Variant)
	if filepath.Dir(bin) != dir {
		return "drama serve finds the engine at " + bin, nil
	}
	rec, err := build.ReadRecord(dir)
	if err != nil {
		return "", nil // an unfinished install: it resumes
	}
	states, err := build.Check(dir, rec)
	if err != nil {
		return "", nil
	}
	for _, s := range states {
		if s.State != build.StateOK {
			return "", nil
		}
	}
	return fmt.Sprintf("built from the pinned sources (%s) on %s, sha256 as recorded", short(rec.Head), rec.InstalledAt), nil
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// installEngine builds the engine from the pinned sources, as drama engine
// install does; an interrupted build resumes.
func (u *up) installEngine(ctx context.Context) (string, error) {
	s, err := cmdutil.LoadSources(u.f, u.opts.SourcesFile, u.opts.VariantSet)
	if err != nil {
		return "", err
	}
	if _, err := build.Complete(s, build.Dir(u.root, s.Variant)); err != nil {
		return "", cmdutil.MismatchError(err)
	}
	unlock, err := hub.Flock(ctx, filepath.Join(u.root, pins.StateDirName, "engine-"+s.Variant+".lock"), 5*time.Second)
	if err != nil {
		return "", cmdutil.FlockAdvice(err, "another drama engine install of "+s.Variant, "--lock-wait")
	}
	defer unlock()
	hb := u.heartbeat("engine")
	defer hb.stop()
	o := build.Options{Root: u.root, Sources: s, Source: u.opts.Source, Zig: cmp.Or(u.opts.Zig, u.f.Getenv("ZIG")),
		NVCC: cmp.Or(u.opts.NVCC, u.f.Getenv("NVCC")), Env: os.Environ(), Step: func(e build.StepEvent) {
			hb.set(e)
			line := e.Step + ": " + e.Status
			if e.Detail != "" {
				line += ": " + e.Detail
			}
			u.rep.info("engine", line)
		}}
	rec, err := build.Install(ctx, o)
	if err != nil {
		return "", u.engineAdvice(err)
	}
	var names []string
	for _, b := range rec.Binaries {
		names = append(names, b.Name+" "+short(b.SHA256))
	}
	return "installed in " + build.Dir(u.root, s.Variant) + ": " + strings.Join(names, ", "), nil
}

// engineAdvice adds to a refused build what to give drama up.
func (u *up) engineAdvice(err error) error {
	again := func(flag, value string) string {
		return u.f.Suggest(append([]string{"up"}, cmdutil.WithFlag(u.opts.Given, flag, value)...)...)
	}
	var (
		te *build.ToolchainError
		ce *build.CommitError
	)
	switch {
	case errors.As(err, &te):
		if flag := map[string]string{build.ToolZig: "--zig", build.ToolNVCC: "--nvcc"}[te.Tool]; flag != "" {
			err = fmt.Errorf("%w, then name it: run `%s` (or set %s)", err, again(flag, te.Default), te.Env)
		}
	case errors.As(err, &ce):
		err = fmt.Errorf("%w; point --source at a mirror: run `%s`", err, again("--source", "MIRROR"))
	}
	if errors.Is(err, build.ErrMismatch) {
		return cmdutil.MismatchError(err)
	}
	return err
}

// heartbeat says every cmdutil.LineInterval which build step still runs.
type heartbeat struct {
	mu    sync.Mutex
	step  string
	since time.Time
	quit  chan struct{}
	done  chan struct{}
}

func (u *up) heartbeat(name string) *heartbeat {
	h := &heartbeat{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		t := time.NewTicker(cmdutil.LineInterval)
		defer t.Stop()
		for {
			select {
			case <-h.quit:
				return
			case <-t.C:
				h.mu.Lock()
				if h.step != "" {
					u.rep.info(name, fmt.Sprintf("%s: still running (%s)", h.step, time.Since(h.since).Round(time.Second)))
				}
				h.mu.Unlock()
			}
		}
	}()
	return h
}

func (h *heartbeat) set(e build.StepEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Status == "start" {
		h.step, h.since = e.Step, time.Now()
	} else {
		h.step = ""
	}
}

func (h *heartbeat) stop() {
	close(h.quit)
	<-h.done
}

func (u *up) qualifyDone(context.Context) (string, error) {
	if !u.opts.Qualify {
		return "not asked: --qualify runs drama qualify (so does --require-qualified)", nil
	}
	want, _, err := cmdutil.CurrentBinding(u.f, u.opts.PinsFile, u.opts.VariantSet)
	if err != nil {
		return "", err
	}
	if st := qualify.Check(u.root, want); st.OK() {
		return "the qualification marker holds for this host, the pins and the engine", nil
	}
	return "", nil
}

// qualify runs drama qualify with the engine drama serve will run and the
// serve flags given.
func (u *up) qualify(ctx context.Context) (string, error) {
	sf := u.opts.Serve
	args := append(u.opts.globalArgs(u.root), "qualify")
	if u.opts.PinsFile != "" {
		args = append(args, "--pins", u.opts.PinsFile)
	}
	if u.opts.AcceptNumerics {
		args = append(args, "--accept-native-numerics")
	}
	for flag, v := range map[string]string{"--engine-bin": sf.EngineBin, "--plugin-dir": sf.PluginDir} {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	if sf.Engine != "" {
		args = append(args, "--engine", sf.Engine)
	}
	var rest []string
	for i := 0; i < len(sf.Args); i++ {
		name, _, _ := strings.Cut(strings.TrimPrefix(sf.Args[i], "--"), "=")
		skip := map[string]bool{"engine": true, "engine-bin": true, "plugin-dir": true, "addr": true, "require-qualified": true}[name]
		if !strings.Contains(sf.Args[i], "=") {
			if !skip {
				rest = append(rest, sf.Args[i], sf.Args[i+1])
			}
			i++
			continue
		}
		if !skip {
			rest = append(rest, sf.Args[i])
		}
	}
	if len(rest) > 0 {
		args = append(append(args, "--"), rest...)
	}
	if err := u.opts.peers.Run(ctx, args...); err != nil {
		return "", err
	}
	return "qualified: " + qualify.Path(u.root, u.p.Variant), nil
}

// serve runs drama serve in the foreground, or installs the service, and
// says where it answers once GET /ready does.
func (u *up) serve(ctx context.Context) (string, error) {
	sf := u.opts.Serve
	if u.opts.Service {
		args := append(append(u.opts.globalArgs(u.root), "service", "install"), sf.Args...)
		if err := u.opts.peers.Run(ctx, args...); err != nil {
			return "", err
		}
		addr := cmp.Or(sf.Addr, serverec.DefaultAddr)
		if err := waitReady(ctx, "http://"+addr, sf.ReadyTimeout+time.Minute, nil); err != nil {
			return "", fmt.Errorf("the service was installed but %w: see drama service status", err)
		}
		u.ready(addr)
		return "the service answers at http://" + addr, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- u.opts.peers.Run(ctx, append(append(u.opts.globalArgs(u.root), "serve"), sf.Args...)...)
	}()
	addr, err := u.waitServing(ctx, sf.ReadyTimeout+time.Minute, done)
	if err != nil {
		cancel()
		<-done
		return "", err
	}
	u.ready(addr)
	u.rep.step("serve", "ready", "http://"+addr+" (Ctrl-C stops it)", "")
	if err := <-done; err != nil {
		return "", err
	}
	return "drama serve stopped", nil
}

// waitServing waits for this process's drama serve record, then for its
// GET /ready, and returns its address.
func (u *up) waitServing(ctx context.Context, limit time.Duration, done <-chan error) (string, error) {
	deadline := time.Now().Add(limit)
	pid := os.Getpid()
	for {
		recs, _ := serverec.List(u.root)
		for _, r := range recs {
			if r.PID == pid {
				return r.Addr, waitReady(ctx, "http://"+r.Addr, time.Until(deadline), done)
			}
		}
		select {
		case err := <-done:
			if err == nil {
				err = errors.New("drama serve ended before it listened")
			}
			return "", err
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("drama serve did not listen within %s", limit)
		}
	}
}

// waitReady polls url's GET /ready until it answers 200.
func waitReady(ctx context.Context, url string, limit time.Duration, done <-chan error) error {
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		if resp, err := client.Get(url + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET %s/ready did not answer 200 within %s", url, limit.Round(time.Second))
		}
		select {
		case err := <-done:
			if err == nil {
				err = errors.New("drama serve ended before it was ready")
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sayText is what the printed drama say line speaks.
const sayText = "Hello from drama."

// ready prints where drama serve answers: its address, the page, and a
// drama say line that works as printed (with the key it needs).
func (u *up) ready(addr string) {
	url := "http://" + addr
	out := "hello.wav"
	say := "drama say " + cmdutil.ShellQuote(sayText) + " --server " + url + " -o " + out
	if _, err := os.Stat(out); err == nil {
		say += " --force"
	}
	keyNote := ""
	switch {
	case u.f.APIKey() != "":
		keyNote = "drama say sends the key in " + cmdutil.APIKeyEnv + ", set in this environment"
	case u.opts.Serve.APIKeyFile != "":
		say = cmdutil.APIKeyEnv + "=$(awk '$1 !~ /^#/ && NF {print $1; exit}' " + cmdutil.ShellQuote(u.opts.Serve.APIKeyFile) + ") " + say
		keyNote = "the key is the first of " + u.opts.Serve.APIKeyFile + ", given in " + cmdutil.APIKeyEnv
	}
	if u.rep.enc != nil {
		u.rep.emit(Event{Event: "ready", URL: url, Page: url + "/", Say: say, Detail: keyNote})
		return
	}
	fmt.Fprintf(u.f.IO.Out, "drama serve answers at %s\npage: %s/\nsay:  %s\n", url, url, say)
	if keyNote != "" {
		fmt.Fprintf(u.f.IO.Out, "key:  %s\n", keyNote)
	}
}
