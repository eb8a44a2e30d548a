package pth

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package wraps one of them, so
// callers can test the kind of failure with errors.Is; the wrapping error
// (FormatError, RecordError, PickleError or TensorError) names the record,
// byte offset or tensor.
var (
	// ErrFormat: the file is not a torch.save checkpoint this package reads.
	ErrFormat = errors.New("not a torch.save checkpoint")
	// ErrTorchScript: the archive is a TorchScript module, which is refused.
	ErrTorchScript = errors.New("TorchScript archive (torch.jit.save) refused: save the model's state_dict() with torch.save instead")
	// ErrTruncated: the file ends before a structure it declares.
	ErrTruncated = errors.New("truncated")
	// ErrLayout: an archive entry is outside the archive prefix or misplaced.
	ErrLayout = errors.New("archive layout")
	// ErrDuplicate: two archive entries have the same name.
	ErrDuplicate = errors.New("duplicate entry")
	// ErrOverlap: two archive entries share bytes.
	ErrOverlap = errors.New("overlapping entries")
	// ErrCompressed: a record that must be read in place is compressed.
	ErrCompressed = errors.New("compressed record")
	// ErrByteOrder: the archive's byteorder record is not "little".
	ErrByteOrder = errors.New("byte order")
	// ErrVersion: the archive's version record is missing or unsupported.
	ErrVersion = errors.New("archive version")
	// ErrMissingRecord: a record the pickle refers to is not in the archive.
	ErrMissingRecord = errors.New("missing record")
	// ErrLimit: a size or count exceeds the reader's Limits.
	ErrLimit = errors.New("limit exceeded")
	// ErrOpcode: the pickle uses an opcode outside the allow-list.
	ErrOpcode = errors.New("opcode not allowed")
	// ErrGlobal: the pickle names a global outside the allow-list.
	ErrGlobal = errors.New("global not allowed")
	// ErrPickle: the pickle is malformed (stack, memo, marks, operands).
	ErrPickle = errors.New("malformed pickle")
	// ErrArgs: a constructor got arguments of the wrong number or type.
	ErrArgs = errors.New("bad arguments")
	// ErrPersID: a persistent id is not a storage reference.
	ErrPersID = errors.New("bad persistent id")
	// ErrKey: a storage key is not a plain record name.
	ErrKey = errors.New("bad storage key")
	// ErrKeyType: a dictionary key is not a string or an integer.
	ErrKeyType = errors.New("bad dictionary key")
	// ErrDuplicateKey: a dictionary key appears twice.
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrUnsupported: the checkpoint uses a feature that is valid torch but not supported.
	ErrUnsupported = errors.New("unsupported")
	// ErrRecordSize: a storage record's size does not match its declared numel.
	ErrRecordSize = errors.New("record size mismatch")
	// ErrStorageConflict: one storage key is declared with two types or sizes.
	ErrStorageConflict = errors.New("storage declared twice differently")
	// ErrOutOfBounds: a tensor view reaches past its storage.
	ErrOutOfBounds = errors.New("view out of storage bounds")
	// ErrOverflow: a size computation overflows int64.
	ErrOverflow = errors.New("size overflow")
	// ErrNotStateDict: the pickle is not a dictionary of tensors.
	ErrNotStateDict = errors.New("not a state dict")
	// ErrWeightNorm: a weight-norm pair cannot be folded.
	ErrWeightNorm = errors.New("weight norm")
	// ErrChecksum: a record's CRC-32 does not match its bytes.
	ErrChecksum = errors.New("checksum mismatch")
)

// FormatError reports a problem with the file as a whole or its container
// structure at a byte offset (-1 when no offset applies).
type FormatError struct {
	Offset int64
	Msg    string
	Err    error
}

// Error formats the error with what it names.
func (e *FormatError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("pth: %s: %v", e.Msg, e.Err)
	}
	return fmt.Sprintf("pth: offset %d: %s: %v", e.Offset, e.Msg, e.Err)
}

// Unwrap returns the sentinel.
func (e *FormatError) Unwrap() error { return e.Err }

// RecordError reports a problem with one archive record.
type RecordError struct {
	Name string
	Msg  string
	Err  error
}

// Error formats the error with what it names.
func (e *RecordError) Error() string {
	return fmt.Sprintf("pth: record %q: %s: %v", e.Name, e.Msg, e.Err)
}

// Unwrap returns the sentinel.
func (e *RecordError) Unwrap() error { return e.Err }

// PickleError reports a problem in the state-dict pickle at a byte offset of
// the pickle stream, with the opcode being executed.
type PickleError struct {
	Offset int64
	Op     byte
	Msg    string
	Err    error
}

// Error formats the error with what it names.
func (e *PickleError) Error() string {
	return fmt.Sprintf("pth: pickle offset %d (opcode %s): %s: %v", e.Offset, opName(e.Op), e.Msg, e.Err)
}

// Unwrap returns the sentinel.
func (e *PickleError) Unwrap() error { return e.Err }

// TensorError reports a problem with one named tensor.
type TensorError struct {
	Name string
	Msg  string
	Err  error
}

// Error formats the error with what it names.
func (e *TensorError) Error() string {
	return fmt.Sprintf("pth: tensor %q: %s: %v", e.Name, e.Msg, e.Err)
}

// Unwrap returns the sentinel.
func (e *TensorError) Unwrap() error { return e.Err }

func formatErr(off int64, err error, format string, args ...any) error {
	return &FormatError{Offset: off, Msg: fmt.Sprintf(format, args...), Err: err}
}

func recordErr(name string, err error, format string, args ...any) error {
	return &RecordError{Name: name, Msg: fmt.Sprintf(format, args...), Err: err}
}

func tensorErr(name string, err error, format string, args ...any) error {
	return &TensorError{Name: name, Msg: fmt.Sprintf(format, args...), Err: err}
}
