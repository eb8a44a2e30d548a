// Package cmdutil holds what every drama command shares: the I/O streams and
// their terminal state, the global options, the exit-code table, table and
// JSON output, progress reporting, advice that repeats the user's flags, and
// the log handlers of a server command. Only command packages under
// cmd/internal import it; domain packages report progress through plain
// callbacks and never see a terminal.
//
// The shape and naming rule of a command package, and where what two
// commands share lives: docs/ARCHITECTURE.md.
package cmdutil
