// Package cmdutil holds what every drama command shares: the I/O streams and
// their terminal state, the global options, the exit-code table, table and
// JSON output, and progress reporting.
//
// Only command packages under cmd/internal import it; domain packages report
// progress through plain callbacks and never see a terminal.
package cmdutil
