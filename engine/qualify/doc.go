// Package qualify decides whether a host is qualified to serve a variant:
// the checks of a qualification run (end to end over drama serve's API,
// and the gates a benchmark must pass) and the marker a passing run leaves
// at <root>/.drama/qualified-<variant>.json. The marker is bound to the
// host (Host), the pins' sha256 (PinsSHA256, of their canonical JSON) and
// the engine binary's sha256 as <root>/engine/engine.sha256 records it, so
// that new pins, a rebuilt engine or another host make it stale (Check);
// it is written only when every step passed and the operator accepted the
// native engine's numerics. The steps, gates and marker: docs/bench.md
// ("drama qualify").
package qualify
