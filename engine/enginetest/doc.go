// Package enginetest holds the conformance suite every engine plugin must
// pass, and a fake engine for tests of code built on package engine.
//
// Run checks one engine step by step (see its doc comment for the list);
// InProcess puts an engine behind go-plugin's real gRPC layer inside the
// test process; TestBinaryPlugin, ServeChild and Subprocess run it as a
// real plugin process started through engine/host, checksum file and all.
//
// Fake is an engine.Engine with a real child process (sleep) standing in
// for the native server. Its audio is deterministic noise derived from the
// request (1 + runes/4 frames of 2048 samples), not speech. Limits: the
// crash step kills the pid Health reports, so it needs an OS with SIGKILL;
// the suite waits at most Config.Timeout (30 s) for any one step.
package enginetest
