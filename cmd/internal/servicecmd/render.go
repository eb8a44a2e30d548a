package servicecmd

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Spec is what a service runs: drama serve with its flags, on a root.
type Spec struct {
	// Exe is the drama binary, an absolute path.
	Exe string
	// Args are drama's arguments: "serve" and its flags.
	Args []string
	// Root is the drama root: the unit waits for its filesystem and runs there.
	Root string
	// Addr is the address served, for the description.
	Addr string
	// Grace is drama serve's --grace; the stop timeout is longer.
	Grace time.Duration
	// System is a system-wide service (else the user's own).
	System bool
	// User runs a system service as this user (empty: root).
	User string
	// Env are variables the service is given (name=value), e.g. PATH.
	Env []string
	// LogFile is where launchd writes the output (systemd: the journal).
	LogFile string
}

// RestartDelay is the wait before a failed drama serve is started again.
const RestartDelay = 5 * time.Second

// StopTimeout is how long the manager waits after SIGTERM before SIGKILL:
// drama serve lets open requests finish within --grace, then gives the
// engine another --grace to stop; past both, a margin.
func (s Spec) StopTimeout() time.Duration {
	return 2*s.Grace + 15*time.Second
}

// Unit renders a systemd unit.
func (s Spec) Unit() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Written by drama service install; remove it with drama service uninstall.")
	w("[Unit]")
	w("Description=drama serve: Drama 3 speech API on %s", s.Addr)
	w("Wants=network-online.target")
	w("After=network-online.target")
	w("RequiresMountsFor=%s", pathListQuote(s.Root))
	w("StartLimitIntervalSec=300")
	w("StartLimitBurst=10")
	w("")
	w("[Service]")
	w("Type=exec")
	if s.System && s.User != "" {
		w("User=%s", s.User)
	}
	w("WorkingDirectory=%s", unitEscapePath(s.Root))
	env := append([]string(nil), s.Env...)
	sort.Strings(env)
	for _, e := range env {
		w("Environment=%s", envQuote(e))
	}
	w("ExecStart=%s", execLine(append([]string{s.Exe}, s.Args...)))
	w("Restart=on-failure")
	w("RestartSec=%ds", int(RestartDelay.Seconds()))
	w("KillSignal=SIGTERM")
	w("KillMode=mixed")
	w("TimeoutStopSec=%ds", int((s.StopTimeout()+time.Second-1)/time.Second))
	w("StandardOutput=journal")
	w("StandardError=journal")
	w("SyslogIdentifier=drama")
	w("")
	w("[Install]")
	if s.System {
		w("WantedBy=multi-user.target")
	} else {
		w("WantedBy=default.target")
	}
	return b.String()
}

// execLine quotes argv for ExecStart=: each word in double quotes when it
// needs them, with systemd's specifiers (%) and variables ($) escaped.
func execLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = execQuote(a)
	}
	return strings.Join(out, " ")
}

func execQuote(a string) string {
	a = strings.ReplaceAll(a, "%", "%%")
	a = strings.ReplaceAll(a, "$", "$$")
	if a != "" && !strings.ContainsAny(a, " \t\"'\\;") {
		return a
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(a) + `"`
}

// envQuote quotes a name=value for Environment=, which expands specifiers
// (%) but not variables.
func envQuote(e string) string {
	e = strings.ReplaceAll(e, "%", "%%")
	if !strings.ContainsAny(e, " \t\"'\\") {
		return e
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(e) + `"`
}

// pathListQuote quotes a path for a setting that takes a list of paths
// (RequiresMountsFor=), where a space would split it.
func pathListQuote(p string) string {
	p = unitEscapePath(p)
	if !strings.ContainsAny(p, " \t\"'\\") {
		return p
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `"`
}

// unitEscapePath escapes a path for a unit setting that takes a path:
// specifiers only (a path with spaces is kept as it is there).
func unitEscapePath(p string) string { return strings.ReplaceAll(p, "%", "%%") }

// Label is the launchd label of the service.
const Label = "com.drama-tts.drama"

// Plist renders a launchd property list: an agent (the user's) or a daemon.
func (s Spec) Plist() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w(`<?xml version="1.0" encoding="UTF-8"?>`)
	w(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">`)
	w(`<!-- Written by drama service install; remove it with drama service uninstall. -->`)
	w(`<plist version="1.0">`)
	w(`<dict>`)
	w(`  <key>Label</key>`)
	w(`  <string>%s</string>`, xmlEscape(Label))
	w(`  <key>ProgramArguments</key>`)
	w(`  <array>`)
	for _, a := range append([]string{s.Exe}, s.Args...) {
		w(`    <string>%s</string>`, xmlEscape(a))
	}
	w(`  </array>`)
	if s.System && s.User != "" {
		w(`  <key>UserName</key>`)
		w(`  <string>%s</string>`, xmlEscape(s.User))
	}
	w(`  <key>WorkingDirectory</key>`)
	w(`  <string>%s</string>`, xmlEscape(s.Root))
	if len(s.Env) > 0 {
		env := append([]string(nil), s.Env...)
		sort.Strings(env)
		w(`  <key>EnvironmentVariables</key>`)
		w(`  <dict>`)
		for _, e := range env {
			k, v, _ := strings.Cut(e, "=")
			w(`    <key>%s</key>`, xmlEscape(k))
			w(`    <string>%s</string>`, xmlEscape(v))
		}
		w(`  </dict>`)
	}
	w(`  <key>RunAtLoad</key>`)
	w(`  <true/>`)
	w(`  <key>KeepAlive</key>`)
	w(`  <dict>`)
	w(`    <key>SuccessfulExit</key>`)
	w(`    <false/>`)
	w(`  </dict>`)
	w(`  <key>ThrottleInterval</key>`)
	w(`  <integer>%d</integer>`, int(RestartDelay.Seconds()))
	w(`  <key>ExitTimeOut</key>`)
	w(`  <integer>%d</integer>`, int((s.StopTimeout()+time.Second-1)/time.Second))
	w(`  <key>StandardOutPath</key>`)
	w(`  <string>%s</string>`, xmlEscape(s.LogFile))
	w(`  <key>StandardErrorPath</key>`)
	w(`  <string>%s</string>`, xmlEscape(s.LogFile))
	w(`</dict>`)
	w(`</plist>`)
	return b.String()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}
