// Package cmdutil holds what every drama command shares: the I/O streams and
// their terminal state, the global options, the exit-code table, table and
// JSON output, and progress reporting.
//
// Only command packages under cmd/internal import it; domain packages report
// progress through plain callbacks and never see a terminal.
//
// Command packages follow one shape. Each package cmd/internal/<x>cmd
// exports NewCmd(f *cmdutil.Factory, ...) for the command it is named for;
// a command group adds its verbs, built by NewCmd<Verb> in the same package
// (pinscmd.NewCmdDiff, pthcmd.NewCmdConvert). The factory parameter is always f, and the options struct holds
// it in the field F. Where a constructor takes runF, a non-nil runF replaces
// the command's run so that tests can check the parsed options. Sibling
// command packages never import each other (TestCommandPackagesImportNoSibling
// in cmd/internal/cli holds the rule): what two commands share lives in a
// package of its own beside them (hubaccess, benchrun), in cmdutil or in
// the domain, and cmd/internal/cli
// puts a verb built elsewhere into its group, as with `drama pins lock`.
package cmdutil
