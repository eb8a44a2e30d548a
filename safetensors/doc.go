// Package safetensors reads and writes safetensors checkpoints, single files
// and sharded directories, without loading tensors into memory.
//
// # Format
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// UTF-8 JSON, then the tensor data. The JSON is an object mapping each tensor
// name to {"dtype", "shape", "data_offsets": [begin, end]}, with an optional
// "__metadata__" object of string values. Offsets are relative to the first
// byte after the header; sorted by offset, the tensors tile the data area
// exactly, with no gap and no overlap, and end-begin equals the element count
// times the dtype's size. Numbers are little-endian.
//
// # Limits enforced by the Reader
//
//   - header at most 100 MB (MaxHeaderSize), starting with '{', optionally
//     padded with trailing spaces;
//   - dtypes F64 F32 F16 BF16 F8_E4M3 F8_E5M2 I64 I32 I16 I8 U8 BOOL; any other
//     is an error naming the tensor;
//   - dimensions non-negative, element counts without overflow, no duplicate
//     names, offsets tiling the data area to the file's last byte.
//
// Every problem is a *FormatError naming the file offset or tensor, and
// matches ErrFormat with errors.Is.
//
// # Writer
//
// Plan lays out a file before any data exists: the header (with every offset)
// is fixed first, padded with spaces to a multiple of 8 bytes, and each tensor
// gets a fixed byte range. Layout.WriteFile then lets several workers fill
// their ranges concurrently with positioned writes, from a caller-side Source,
// into a temporary file beside the target that is synced and renamed into
// place; each write's writeback starts at once, so the final sync has little
// left, and WriteOptions.Filled lets a caller writing several files start the
// next while one is being synced. The output's bytes depend only on the plan and the Source, never on
// the number of workers.
//
// # Sharded checkpoints
//
// A checkpoint directory holds either model.safetensors or
// model.safetensors.index.json, whose "weight_map" names the shard of each
// tensor and whose "metadata" carries "total_size" (the sum of tensor data
// bytes) and any other keys, kept verbatim. OpenCheckpoint opens either form;
// Checkpoint.Check reports index problems: a tensor the index names that its
// shard lacks, a shard tensor the index does not name, a missing shard, or a
// wrong total_size.
package safetensors
