package native

// ProcIdentity exposes procIdentity to the tests.
var ProcIdentity = procIdentity
