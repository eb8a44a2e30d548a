// Package enginetest holds the conformance suite every engine plugin must
// pass, and a fake engine for tests of code built on package engine.
//
// Run checks one engine step by step (see its doc comment for the list);
// InProcess puts an engine behind go-plugin's real gRPC layer inside the
// test process; TestBinaryPlugin, ServeChild and Subprocess run it as a
// real plugin process started through engine/host, checksum file and all.
// Fake is an engine.Engine with a real child process (sleep) standing in
// for the native server; its audio is deterministic noise, not speech.
// The suite, the fake and their limits: docs/engine.md.
package enginetest
