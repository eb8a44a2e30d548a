// Package qualify decides whether a host is qualified to serve a variant:
// the checks of a qualification run (end to end over drama serve's API,
// and the gates a benchmark must pass) and the marker a passing run leaves.
//
// The marker lives at <root>/.drama/qualified-<variant>.json, inside the
// root's state folder, so drama verify never counts it as an unpinned file.
// It is bound to the host (Host), the pins' sha256 (PinsSHA256: the sha256
// of the pins' canonical JSON) and the engine binary's sha256 as its
// record <root>/engine/engine.sha256 gives it: new pins, a rebuilt engine,
// a changed record or another host make it stale (Check). It is written
// only when every step passed and the operator accepted the native
// engine's numerics, which are not bit-exact with the reference; the
// acceptance is recorded in the marker.
package qualify
