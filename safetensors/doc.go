// Package safetensors reads and writes safetensors checkpoints, single files
// and sharded directories, without loading tensors into memory. It owns the
// streaming reader and its limits (every problem a *FormatError matching
// ErrFormat), the planned writer whose workers fill fixed byte ranges in
// parallel (Plan, Layout.WriteFile), and the sharded index
// (OpenCheckpoint, Checkpoint.Check).
//
// The file format, the reader's limits, the writer and the index:
// docs/quantize.md ("Internals: the safetensors packages").
package safetensors
