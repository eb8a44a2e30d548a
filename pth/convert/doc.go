// Package convert writes the tensors of a torch.save checkpoint (read with
// package pth) as a safetensors file.
//
// A conversion is planned first (Plan): the tensors are selected (a prefix
// stripped as the codec's loader does, names matching a pattern dropped),
// weight-norm pairs optionally folded into plain weights in FP32, and each
// floating-point tensor given its output dtype (kept, or cast to F16 or BF16
// with round-to-nearest-even, or widened to F32). Integer, boolean and FP8
// tensors always keep their dtype.
//
// Writing (Plan.Write) streams into a temporary file beside the target that
// is synced and renamed into place. A tensor whose bytes are one run of the
// checkpoint taken as they are (same dtype, contiguous) is copied by one
// copier, in file order: reflinked where the file system can share whole
// blocks, else inside the kernel (copy_file_range), else with large pread
// and pwrite. Every other tensor is read with pread in chunks of ChunkSize
// bytes, cast if needed, and written at its fixed offset with pwrite by
// several workers at once. Written ranges are sent on to the disk at once
// (atomicfile.StartWriteback), so the final sync overlaps the work. Memory
// stays at a few chunks per worker whatever the checkpoint's size.
// Non-contiguous views are written contiguous; views sharing one storage
// are written once each, as separate tensors.
//
// The output's __metadata__ records the format ("pt"), the source file's
// name and sha256 (hashed while the tensors are copied, or given by a caller
// that has verified it already; source_sha256_origin says which) and the
// options.
package convert
