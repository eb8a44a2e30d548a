// Package native starts and supervises a native Drama 3 engine process and
// speaks its HTTP contract. It owns the process (Launch: its own group, the
// parent-death signal, explicit environment, pipes into a log file and a
// tail, the runtime file that finds a crashed run's leftover, readiness,
// stop), memory admission, the engine binary's checksum, the two flavors'
// command lines (CUDA, Metal), and Client, which reads the server's replies
// off the raw connection so that a trailer or a missing terminating chunk
// is never lost.
//
// The start step by step, the HTTP contract and its limits, and the Metal
// differences: docs/native.md.
package native
