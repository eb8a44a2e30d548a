package native

// ProcIdentity exposes procIdentity to the tests.
var ProcIdentity = procIdentity

// LaunchRetryingPort exposes launchRetryingPort to the tests.
var LaunchRetryingPort = launchRetryingPort
