// Package pth reads torch.save checkpoints, such as the Drama 3 codec's
// codec.pth, without running anything they contain. It owns the zip and
// legacy readers, the restricted pickle machine (a fixed table of opcodes
// and globals, nothing called or imported), tensor views read in place,
// weight-norm folding, and the recognition of the Drama codec (CheckCodec).
// Every error names the byte offset, record or tensor; no input makes it
// panic.
//
// What is accepted and refused, and how the reader works (the formats, the
// pickle machine, tensors, state dicts): docs/pth.md.
package pth
