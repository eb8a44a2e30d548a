// Package pins describes a pinned install of Drama 3 and verifies files
// against it. It owns the pins file format ("drama-pins/1"), the built-in
// pins of each variant and of the engine sources, the one loader (Load),
// completeness and the lock file (LockFileName), verification by size or
// sha256 (Verify) with the verified-state record, hashing (HashFile), and
// what a root has installed.
//
// The format, its fields, the lock file, verification and a root's layout:
// docs/pins.md.
package pins
