// Package pth reads torch.save checkpoints, such as the Drama 3 codec's
// codec.pth, without running anything they contain.
//
// # Formats
//
// A checkpoint written by torch 1.6 or later is an uncompressed zip archive
// whose entries all live under one directory, the archive prefix (the
// file's base name when it was saved to a path, "archive" when saved to a
// buffer): <prefix>/data.pkl holds the pickled state dict,
// <prefix>/data/<key> the raw little-endian bytes of each storage,
// <prefix>/version the format version (1 to 10 are accepted) and, since
// torch 2.1, <prefix>/byteorder ("little"; anything else is refused).
// NewReader indexes the zip itself (ZIP64 included): every entry must be
// under the prefix, named by a clean relative path (no "", ".", ".."
// element, leading slash or backslash; checked as written, never cleaned),
// no name may appear twice, no two entries may share
// bytes, and each local header must agree with its central entry. Tensor
// data records must be stored, not deflated, because they are read in
// place; data.pkl and the small records may be deflated. TorchScript
// archives (constants.pkl or code/) are refused.
//
// The legacy format (torch.save with _use_new_zipfile_serialization=False,
// the default before torch 1.6) is read too: five pickles (magic number,
// protocol version 1001, system information, the object, the storage keys)
// followed by each storage as an int64 element count and its bytes. Legacy
// storage views (view_metadata) are refused. The tar format of torch
// before 0.4 and the PYTORCH1 preview format are refused with a message
// saying to re-save the checkpoint.
//
// # The pickle machine
//
// The state dict is unpickled by a small machine that knows only the
// opcodes a tensor state dict uses (protocol 2 and the protocol 4 framing
// opcodes) and a fixed table of globals: collections.OrderedDict,
// torch._utils._rebuild_tensor_v2 and _v3, _rebuild_parameter (and
// _with_state, without state), the typed storage classes, UntypedStorage
// and the dtypes. Globals become inert tokens; nothing is ever called or
// imported. Every other opcode or global is refused (ErrOpcode, ErrGlobal,
// or ErrUnsupported for valid torch features such as quantized or sparse
// tensors). The machine is iterative, so no input drives recursion, and
// Limits bound the pickle's size, opcodes, stack, MARK depth, memo, string
// length, container sizes, tensor rank and count. Items are type-checked:
// SETITEM only on dicts, APPEND only on lists, BUILD only on an
// OrderedDict, dictionary keys only str or int and never twice.
//
// # Tensors
//
// A tensor is a view of a storage: dtype, shape, stride and storage offset
// in elements. Sizes, strides and offsets must be non-negative, every
// element must lie inside the storage (computed with overflow checks), and
// a storage's record must be exactly numel x element size bytes. Views may
// share a storage and may be non-contiguous; Tensor.ReadAt returns their
// bytes as if contiguous, reading the file with pread. A view whose
// contiguous size exceeds its storage (a broadcast) is accepted up to
// Limits.MaxViewBytes. Supported dtypes: F64, F32, F16, BF16, F8_E4M3,
// F8_E5M2, I64, I32, I16, I8, U64, U32, U16, U8 and BOOL.
//
// A Reader holds only the directory and the tensor list: memory does not
// grow with the size of the tensor data.
//
// # State dicts
//
// The pickle must hold a dict; when it has a "state_dict" entry that is a
// dict, that is used (training checkpoints). The dict's tensor entries are
// the Reader's Tensors, in order; other entries are listed in Skipped.
// StripPrefix applies the codec loader's "generator." rule, FoldWeightNorm
// folds weight-norm pairs in FP32, and CheckCodec recognises the Drama
// codec by its keys and reads its geometry off the shapes.
//
// # Errors
//
// Every error wraps one of the sentinels (ErrFormat, ErrGlobal, ...) and
// is a *FormatError, *RecordError, *PickleError or *TensorError naming the
// byte offset, record or tensor. No input makes the package panic.
package pth
