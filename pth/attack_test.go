package pth

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// pk builds pickle bytes.
type pk struct{ bytes.Buffer }

func (p *pk) op(b ...byte) *pk { p.Write(b); return p }
func (p *pk) global(mod, name string) *pk {
	p.WriteString("c" + mod + "\n" + name + "\n")
	return p
}
func (p *pk) str(s string) *pk {
	p.WriteByte(opBinUnicode)
	binary.Write(p, binary.LittleEndian, uint32(len(s)))
	p.WriteString(s)
	return p
}
func (p *pk) int(v int64) *pk {
	if v >= 0 && v < 256 {
		return p.op(opBinInt1, byte(v))
	}
	p.WriteByte(opLong1)
	p.WriteByte(8)
	binary.Write(p, binary.LittleEndian, v)
	return p
}
func (p *pk) ints(vs ...int64) *pk {
	p.op(opMark)
	for _, v := range vs {
		p.int(v)
	}
	return p.op(opTuple)
}

// storage pushes the persistent-load result of ('storage', torch.<cls>, key, 'cpu', numel).
func (p *pk) storage(cls, key string, numel int64) *pk {
	p.op(opMark).str("storage").global("torch", cls).str(key).str("cpu").int(numel).op(opTuple, opBinPersID)
	return p
}

// tensorArgs describes one _rebuild_tensor_v2 call.
type tensorArgs struct {
	cls, key      string
	numel, offset int64
	size, stride  []int64
}

var okTensor = tensorArgs{"FloatStorage", "0", 6, 0, []int64{2, 3}, []int64{3, 1}}

func (p *pk) tensor(a tensorArgs) *pk {
	p.global("torch._utils", "_rebuild_tensor_v2").op(opMark)
	p.storage(a.cls, a.key, a.numel).int(a.offset).ints(a.size...).ints(a.stride...)
	p.op(opNewFalse).global("collections", "OrderedDict").op(opEmptyTuple, opReduce, opTuple, opReduce)
	return p
}

// stateDict is a pickle of OrderedDict {name: tensor} built from body,
// which pushes key, value pairs.
func stateDict(body func(p *pk)) []byte {
	p := &pk{}
	p.op(opProto, 2).global("collections", "OrderedDict").op(opEmptyTuple, opReduce, opMark)
	body(p)
	p.op(opSetItems, opStop)
	return p.Bytes()
}

func oneTensor(a tensorArgs) []byte {
	return stateDict(func(p *pk) { p.str("w").tensor(a) })
}

// entry is one record of a test archive.
type entry struct {
	name    string
	data    []byte
	deflate bool
}

func torchZip(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Store}
		if e.deflate {
			h.Method = zip.Deflate
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// archive is a well-formed checkpoint around pkl with a 24-byte data/0.
func archive(t testing.TB, pkl []byte, extra ...entry) []byte {
	es := []entry{{"a/data.pkl", pkl, false}, {"a/byteorder", []byte("little"), false}, {"a/data/0", make([]byte, 24), false}, {"a/version", []byte("3\n"), false}}
	return torchZip(t, append(es, extra...)...)
}

// attack is one input and the refusal it must get.
type attack struct {
	name  string
	file  []byte
	want  error
	where string // a substring naming the offset, key or record
	lim   *Limits
}

func pickleAttacks(t *testing.T) []attack {
	bad := func(mod func(a *tensorArgs)) []byte {
		a := okTensor
		mod(&a)
		return oneTensor(a)
	}
	raw := func(b ...byte) []byte { return append([]byte{opProto, 2}, b...) }
	var deep pk
	deep.op(opProto, 2, opEmptyTuple)
	for range 1_000_000 {
		deep.op(opTuple1)
	}
	deep.op(opStop)
	var marks pk
	marks.op(opProto, 2)
	for range 1_000_000 {
		marks.op(opMark)
	}
	var memo pk
	memo.op(opProto, 2, opNone)
	for i := range 2000 {
		memo.op(opLongBinPut)
		binary.Write(&memo, binary.LittleEndian, uint32(0xffffffff-i))
	}
	var rank pk
	rank.op(opMark)
	for range 10000 {
		rank.int(1)
	}
	rank.op(opTuple)
	var dicts pk
	dicts.op(opProto, 2, opEmptyList)
	for range DefaultLimits.MaxOps/2 - 2 {
		dicts.op(opEmptyDict, opAppend)
	}
	dicts.op(opStop)
	smallMemo := DefaultLimits
	smallMemo.MaxMemo = 1000
	return []attack{
		{"P1 os.system", (&pk{}).op(opProto, 2).global("os", "system").str("id").op(opTuple1, opReduce, opStop).Bytes(), ErrGlobal, "os.system", nil},
		{"P2 builtins.eval", (&pk{}).op(opProto, 2).global("builtins", "eval").op(opStop).Bytes(), ErrGlobal, "builtins.eval", nil},
		{"P2 __builtin__.getattr", (&pk{}).op(opProto, 2).global("__builtin__", "getattr").op(opStop).Bytes(), ErrGlobal, "offset 2", nil},
		{"P3 INST", raw('i', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n', '.'), ErrOpcode, "offset 2", nil},
		{"P3 OBJ", raw(opMark, 'o', '.'), ErrOpcode, "offset 3", nil},
		{"P3 NEWOBJ", raw(opNone, opEmptyTuple, 0x81, '.'), ErrOpcode, "offset 4", nil},
		{"P4 STACK_GLOBAL os.system", (&pk{}).op(opProto, 4).op(0x8c, 2, 'o', 's', 0x8c, 6, 's', 'y', 's', 't', 'e', 'm', opStackGlobal, opStop).Bytes(), ErrGlobal, "os.system", nil},
		{"P4 memo confusion", (&pk{}).op(opProto, 4).str("torch._utils").op(opMemoize).str("os").op(opBinPut, 0, opPop()).op(opBinGet, 0).str("system").op(opStackGlobal, opStop).Bytes(), ErrOpcode, "offset", nil},
		{"P4 memo confusion without POP", (&pk{}).op(opProto, 4).str("torch._utils").op(opMemoize).str("os").op(opBinPut, 0).op(opBinGet, 0).str("system").op(opStackGlobal, opStop).Bytes(), ErrGlobal, "os.system", nil},
		{"P5 BUILD on dict", raw(opEmptyDict, opEmptyDict, opBuild, opStop), ErrPickle, "BUILD on dict", nil},
		{"P5 BUILD on tensor", stateDict(func(p *pk) { p.str("w").tensor(okTensor).op(opEmptyDict, opBuild) }), ErrPickle, "BUILD on tensor", nil},
		{"P6 SETITEM on list", raw(opEmptyList, opNone, opNone, opSetItem, opStop), ErrPickle, "want a dict", nil},
		{"P6 SETITEMS on tensor", stateDict(func(p *pk) { p.str("w").tensor(okTensor).op(opMark).str("k").op(opNone, opSetItems) }), ErrPickle, "set item on tensor", nil},
		{"P7 odd SETITEMS", raw(opEmptyDict, opMark, opNone, opSetItems, opStop), ErrPickle, "key, value pairs", nil},
		{"P8 opcode 0xff", raw(0xff), ErrOpcode, "offset 2 (opcode 0xff)", nil},
		{"P9 LONG1 of 9 bytes", raw(opLong1, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, opStop), ErrUnsupported, "offset 2", nil},
		{"P10 unset memo", raw(opBinGet, 7, opStop), ErrPickle, "memo index 7", nil},
		{"P11 memo growth", memo.Bytes(), ErrLimit, "memo entries", &smallMemo},
		{"P12 BINUNICODE8 of 2^62", raw(opBinUnicode8, 0, 0, 0, 0, 0, 0, 0, 0x40), ErrLimit, "string of 4611686018427387904 bytes", nil},
		{"P12 FRAME of 2^62", (&pk{}).op(opProto, 4, opFrame, 0, 0, 0, 0, 0, 0, 0, 0x40).Bytes(), ErrTruncated, "frame of", nil},
		{"P13 BINUNICODE 0xffffffff", raw(opBinUnicode, 0xff, 0xff, 0xff, 0xff, 'a'), ErrLimit, "string of 4294967295", nil},
		{"P13 BINUNICODE short", raw(opBinUnicode, 100, 0, 0, 0, 'a', 'b'), ErrTruncated, "operand of 100 bytes", nil},
		{"P14 a million MARKs", marks.Bytes(), ErrLimit, "MARK nested deeper than 1024", nil},
		{"P14 a million nested tuples", deep.Bytes(), ErrNotStateDict, "tuple", nil},
		{"half a million empty dicts in a list", dicts.Bytes(), ErrNotStateDict, "list", nil},
		{"more opcodes than the limit", append(append(bytes.Clone(dicts.Bytes()[:len(dicts.Bytes())-1]), opEmptyDict, opAppend, opEmptyDict, opAppend), opStop), ErrLimit, "more than 1048576 opcodes", nil},
		{"P15 STOP on empty stack", raw(opStop), ErrPickle, "STOP with 0 values", nil},
		{"P15 no STOP", raw(opNone), ErrTruncated, "without STOP", nil},
		{"P15 trailing bytes", append(oneTensor(okTensor), 'N'), ErrPickle, "1 bytes after STOP", nil},
		{"P16 invalid UTF-8", raw(opBinUnicode, 2, 0, 0, 0, 0xc3, 0x28, opStop), ErrPickle, "UTF-8", nil},
		{"P17 tuple key", raw(opEmptyDict, opEmptyTuple, opNone, opSetItem, opStop), ErrKeyType, "tuple", nil},
		{"P17 int key in the state dict", stateDict(func(p *pk) { p.int(3).tensor(okTensor) }), ErrKeyType, "3", nil},
		{"P18 duplicate key", stateDict(func(p *pk) { p.str("w").tensor(okTensor).str("w").tensor(okTensor) }), ErrDuplicateKey, `key w set twice`, nil},
		{"P19 OrderedDict with arguments", (&pk{}).op(opProto, 2).global("collections", "OrderedDict").op(opNone, opTuple1, opReduce, opStop).Bytes(), ErrArgs, "want none", nil},
		{"P19 five arguments", stateDict(func(p *pk) {
			p.str("w").global("torch._utils", "_rebuild_tensor_v2").op(opMark).storage("FloatStorage", "0", 6).int(0).ints(6).ints(1).op(opNewFalse, opTuple, opReduce)
		}), ErrArgs, "5 arguments", nil},
		{"P19 str size", stateDict(func(p *pk) {
			p.str("w").global("torch._utils", "_rebuild_tensor_v2").op(opMark).storage("FloatStorage", "0", 6).int(0).str("6").ints(1).op(opNewFalse, opEmptyDict, opTuple, opReduce)
		}), ErrArgs, "str", nil},
		{"P19 bool offset", stateDict(func(p *pk) {
			p.str("w").global("torch._utils", "_rebuild_tensor_v2").op(opMark).storage("FloatStorage", "0", 6).op(opNewTrue).ints(6).ints(1).op(opNewFalse, opEmptyDict, opTuple, opReduce)
		}), ErrArgs, "bool", nil},
		{"P20 four-item id", stateDict(func(p *pk) {
			p.op(opMark).str("storage").global("torch", "FloatStorage").str("0").str("cpu").op(opTuple, opBinPersID)
		}), ErrPersID, "4 items", nil},
		{"P20 module id", stateDict(func(p *pk) {
			p.op(opMark).str("module").global("torch", "FloatStorage").str("0").str("cpu").int(1).op(opTuple, opBinPersID)
		}), ErrPersID, "module", nil},
		{"P20 list id", raw(opEmptyList, opBinPersID, opStop), ErrPersID, "list", nil},
		{"P21 EvilStorage", oneTensor(tensorArgs{"EvilStorage", "0", 6, 0, []int64{6}, []int64{1}}), ErrGlobal, "torch.EvilStorage", nil},
		{"P21 QInt8Storage", oneTensor(tensorArgs{"QInt8Storage", "0", 24, 0, []int64{6}, []int64{1}}), ErrUnsupported, "torch.QInt8Storage", nil},
		{"P21 _rebuild_qtensor", (&pk{}).op(opProto, 2).global("torch._utils", "_rebuild_qtensor").op(opStop).Bytes(), ErrUnsupported, "_rebuild_qtensor", nil},
		{"P21 _get_layout", (&pk{}).op(opProto, 2).global("torch.serialization", "_get_layout").op(opStop).Bytes(), ErrUnsupported, "_get_layout", nil},
		{"P22 v3 with a typed storage", stateDict(func(p *pk) {
			p.str("w").global("torch._utils", "_rebuild_tensor_v3").op(opMark).storage("FloatStorage", "0", 6).int(0).ints(6).ints(1).op(opNewFalse, opEmptyDict).global("torch", "float32").op(opTuple, opReduce)
		}), ErrArgs, "UntypedStorage", nil},
		{"P24 conj metadata", stateDict(func(p *pk) {
			p.str("w").global("torch._utils", "_rebuild_tensor_v2").op(opMark).storage("FloatStorage", "0", 6).int(0).ints(6).ints(1).op(opNewFalse, opEmptyDict, opEmptyDict).str("conj").op(opNewTrue, opSetItem, opTuple, opReduce)
		}), ErrUnsupported, "conj", nil},
		{"T1 view past the storage", bad(func(a *tensorArgs) { a.size, a.stride = []int64{1000, 1000}, []int64{1000, 1} }), ErrOutOfBounds, "element 999999", nil},
		{"T2 negative stride", bad(func(a *tensorArgs) { a.stride = []int64{-3, 1} }), ErrOutOfBounds, "stride -3", nil},
		{"T3 negative offset", bad(func(a *tensorArgs) { a.offset = -1 }), ErrOutOfBounds, "offset -1", nil},
		{"T4 record too big for numel", bad(func(a *tensorArgs) { a.numel, a.size, a.stride = 5, []int64{5}, []int64{1} }), ErrRecordSize, "want 20, got 24", nil},
		{"T4 record too small for numel", bad(func(a *tensorArgs) { a.numel = 7 }), ErrRecordSize, "want 28, got 24", nil},
		{"T5 numel 2^40", bad(func(a *tensorArgs) { a.numel = 1 << 40 }), ErrRecordSize, "got 24", nil},
		{"T6 numel x itemsize overflow", bad(func(a *tensorArgs) { a.numel = 0x4000000000000001 }), ErrOverflow, "4611686018427387905 x 4", nil},
		{"T7 shape product overflow", bad(func(a *tensorArgs) { a.size, a.stride = []int64{1 << 32, 1 << 32}, []int64{0, 0} }), ErrOverflow, "x", nil},
		{"T8 rank 10000", stateDict(func(p *pk) {
			p.str("w").global("torch._utils", "_rebuild_tensor_v2").op(opMark).storage("FloatStorage", "0", 6).int(0)
			p.Write(rank.Bytes())
			p.Write(rank.Bytes())
			p.op(opNewFalse, opEmptyDict, opTuple, opReduce)
		}), ErrLimit, "rank 10000", nil},
		{"T9 one key, two dtypes", stateDict(func(p *pk) {
			p.str("w").tensor(okTensor).str("v").tensor(tensorArgs{"HalfStorage", "0", 12, 0, []int64{12}, []int64{1}})
		}), ErrStorageConflict, `key "0"`, nil},
		{"T10 Half numel for Float bytes", oneTensor(tensorArgs{"HalfStorage", "0", 6, 0, []int64{6}, []int64{1}}), ErrRecordSize, "want 12, got 24", nil},
		{"broadcast beyond the view limit", bad(func(a *tensorArgs) { a.size, a.stride = []int64{1 << 40}, []int64{0} }), ErrLimit, "overlapping strides", nil},
		{"Z1 key ../data.pkl", oneTensor(tensorArgs{"FloatStorage", "../data.pkl", 6, 0, []int64{6}, []int64{1}}), ErrKey, "../data.pkl", nil},
		{"Z1 key with slash", oneTensor(tensorArgs{"FloatStorage", "0/../0", 6, 0, []int64{6}, []int64{1}}), ErrKey, "0/../0", nil},
		{"Z1 empty key", oneTensor(tensorArgs{"FloatStorage", "", 6, 0, []int64{6}, []int64{1}}), ErrKey, `""`, nil},
		{"Z1 key with NUL", oneTensor(tensorArgs{"FloatStorage", "0\x00", 6, 0, []int64{6}, []int64{1}}), ErrKey, `\x00`, nil},
		{"Z3 key data.pkl", oneTensor(tensorArgs{"FloatStorage", "data.pkl", 6, 0, []int64{6}, []int64{1}}), ErrKey, "data.pkl", nil},
		{"missing record", oneTensor(tensorArgs{"FloatStorage", "9", 6, 0, []int64{6}, []int64{1}}), ErrMissingRecord, "a/data/9", nil},
	}
}

// opPop is POP, which is not allowed.
func opPop() byte { return '0' }

func zipAttacks(t *testing.T) []attack {
	pkl := oneTensor(okTensor)
	ok := archive(t, pkl)
	bomb := torchZip(t, entry{"a/data.pkl", pkl, false}, entry{"a/version", []byte("3"), false}, entry{"a/data/0", make([]byte, 24), false})
	tinyPickle := DefaultLimits
	tinyPickle.MaxPickle = 16
	fewRecords := DefaultLimits
	fewRecords.MaxRecords = 3
	tarFile := make([]byte, 1024)
	copy(tarFile[257:], "ustar")
	return []attack{
		{"Z2 storage only outside the prefix", archive(t, oneTensor(tensorArgs{"FloatStorage", "1", 6, 0, []int64{6}, []int64{1}}), entry{"evil/1", make([]byte, 24), false}), ErrLayout, "evil/1", nil},
		{"Z2 storage elsewhere under the prefix", archive(t, oneTensor(tensorArgs{"FloatStorage", "1", 6, 0, []int64{6}, []int64{1}}), entry{"a/x/1", make([]byte, 24), false}), ErrMissingRecord, "a/data/1", nil},
		{"Z4 entry outside the prefix", archive(t, pkl, entry{"b/data.pkl", pkl, false}), ErrLayout, `"b/data.pkl"`, nil},
		{"Z4 top-level entry", archive(t, pkl, entry{"evil", nil, false}), ErrLayout, `"evil"`, nil},
		{"Z4 entry leaving the prefix once cleaned", archive(t, pkl, entry{"a/../../evil", nil, false}), ErrLayout, `".." path element`, nil},
		{"Z4 dot element", archive(t, pkl, entry{"a/./data/9", nil, false}), ErrLayout, `"." path element`, nil},
		{"Z4 empty element", archive(t, pkl, entry{"a//data/9", nil, false}), ErrLayout, "empty path element", nil},
		{"Z4 absolute name", archive(t, pkl, entry{"/a/data/9", nil, false}), ErrLayout, "leading slash", nil},
		{"Z4 backslash", archive(t, pkl, entry{`a/data\9`, nil, false}), ErrLayout, "backslash", nil},
		{"Z5 duplicate record", archive(t, pkl, entry{"a/data/0", make([]byte, 24), false}), ErrDuplicate, "a/data/0", nil},
		{"Z6 overlapping records", overlap(t, ok), ErrOverlap, "lies inside", nil},
		{"Z6 two entries, one header", sameHeader(t, ok), ErrFormat, "names", nil},
		{"Z7 deflated tensor data", torchZip(t, entry{"a/data.pkl", pkl, false}, entry{"a/version", []byte("3"), false}, entry{"a/data/0", make([]byte, 24), true}), ErrCompressed, "a/data/0", nil},
		{"Z8 inflated size lies", lieSize(t, torchZip(t, entry{"a/data.pkl", pkl, true}, entry{"a/version", []byte("3"), false}, entry{"a/data/0", make([]byte, 24), false}), "a/data.pkl", 10), ErrFormat, "inflated size", nil},
		{"Z8 deflate bomb", lieSize(t, torchZip(t, entry{"a/data.pkl", make([]byte, 1<<20), true}, entry{"a/version", []byte("3"), false}), "a/data.pkl", 1000), ErrFormat, "want 1000", nil},
		{"Z10 truncated file", ok[:len(ok)/2], ErrFormat, "end-of-central-directory", nil},
		{"Z10 missing tail of data", cutData(t, bomb), ErrTruncated, "runs past", nil},
		{"Z11 no version", torchZip(t, entry{"a/data.pkl", pkl, false}, entry{"a/data/0", make([]byte, 24), false}), ErrVersion, "a/version", nil},
		{"Z11 version 999", torchZip(t, entry{"a/data.pkl", pkl, false}, entry{"a/version", []byte("999\n"), false}), ErrVersion, `"999\n"`, nil},
		{"Z11 version not a number", torchZip(t, entry{"a/data.pkl", pkl, false}, entry{"a/version", []byte("three"), false}), ErrVersion, "three", nil},
		{"Z15 TorchScript constants.pkl", archive(t, pkl, entry{"a/constants.pkl", []byte{}, false}), ErrTorchScript, "constants.pkl", nil},
		{"Z15 TorchScript code/", archive(t, pkl, entry{"a/code/m.py", []byte{}, false}), ErrTorchScript, "a/code/m.py", nil},
		{"Z16 preview format", []byte("PYTORCH1\x00\x00\x00\x00"), ErrFormat, "PYTORCH1", nil},
		{"Z16 tar", tarFile, ErrFormat, "tar", nil},
		{"Z16 random bytes", []byte("\x13\x37random bytes that are no checkpoint"), ErrFormat, "unknown format", nil},
		{"Z16 empty file", nil, ErrFormat, "file of 0 bytes", nil},
		{"Z16 PK\\x03", []byte("PK\x03"), ErrFormat, "file of 3 bytes", nil},
		{"Z17 too many entries", archive(t, pkl), ErrLimit, "4 entries, limit 3", &fewRecords},
		{"Z18 pickle over the limit", archive(t, pkl), ErrLimit, "limit 16", &tinyPickle},
		{"no data.pkl", torchZip(t, entry{"a/version", []byte("3"), false}), ErrMissingRecord, "a/data.pkl", nil},
		{"not a dict", archive(t, (&pk{}).op(opProto, 2, opNone, opStop).Bytes()), ErrNotStateDict, "None", nil},
		{"no tensors", archive(t, (&pk{}).op(opProto, 2, opEmptyDict, opStop).Bytes()), ErrNotStateDict, "no tensors", nil},
	}
}

// centralEntries returns the offsets of the central-directory entries.
func centralEntries(b []byte) []int {
	var out []int
	for i := 0; i+4 <= len(b); i++ {
		if binary.LittleEndian.Uint32(b[i:]) == sigCentral {
			out = append(out, i)
		}
	}
	return out
}

func findCentral(t testing.TB, b []byte, name string) int {
	for _, c := range centralEntries(b) {
		n := int(binary.LittleEndian.Uint16(b[c+28:]))
		if string(b[c+46:c+46+n]) == name {
			return c
		}
	}
	t.Fatalf("no central entry %q", name)
	return 0
}

// overlap makes the byteorder record's sizes cover the next local header.
func overlap(t testing.TB, b []byte) []byte {
	b = bytes.Clone(b)
	c := findCentral(t, b, "a/byteorder")
	binary.LittleEndian.PutUint32(b[c+20:], 40)
	binary.LittleEndian.PutUint32(b[c+24:], 40)
	return b
}

// sameHeader points data/0's central entry at data.pkl's local header.
func sameHeader(t testing.TB, b []byte) []byte {
	b = bytes.Clone(b)
	c := findCentral(t, b, "a/data/0")
	binary.LittleEndian.PutUint32(b[c+42:], 0)
	return b
}

// lieSize sets a record's declared uncompressed size.
func lieSize(t testing.TB, b []byte, name string, size uint32) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[findCentral(t, b, name)+24:], size)
	return b
}

// cutData grows data/0's declared sizes past the central directory.
func cutData(t testing.TB, b []byte) []byte {
	b = bytes.Clone(b)
	c := findCentral(t, b, "a/data/0")
	binary.LittleEndian.PutUint32(b[c+20:], 1<<20)
	binary.LittleEndian.PutUint32(b[c+24:], 1<<20)
	return b
}

// memCeiling is the most a refused input may allocate.
const memCeiling = 128 << 20

func checkAttack(t *testing.T, a attack, file []byte) {
	t.Helper()
	lim := DefaultLimits
	if a.lim != nil {
		lim = *a.lim
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := NewReaderLimits(bytes.NewReader(file), int64(len(file)), lim)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > memCeiling {
		t.Errorf("allocated %d bytes, ceiling %d", alloc, memCeiling)
	}
	if err == nil {
		t.Fatalf("accepted: %d tensors", len(r.Tensors))
	}
	if !errors.Is(err, a.want) {
		t.Fatalf("want %v, got %v", a.want, err)
	}
	if !strings.Contains(err.Error(), a.where) {
		t.Errorf("error %q does not name %q", err, a.where)
	}
	if !strings.HasPrefix(err.Error(), "pth: ") {
		t.Errorf("error %q lacks the pth: prefix", err)
	}
}

// TestAttackCatalogue runs the research notes' catalogue of hostile
// checkpoints: each is refused with a typed error naming where, without a
// panic and within a memory ceiling.
func TestAttackCatalogue(t *testing.T) {
	for _, a := range pickleAttacks(t) {
		t.Run(a.name, func(t *testing.T) { checkAttack(t, a, archive(t, a.file)) })
	}
	for _, a := range zipAttacks(t) {
		t.Run(a.name, func(t *testing.T) { checkAttack(t, a, a.file) })
	}
	t.Run("Z12 big endian", func(t *testing.T) {
		f := torchZip(t, entry{"a/data.pkl", oneTensor(okTensor), false}, entry{"a/byteorder", []byte("big"), false}, entry{"a/data/0", make([]byte, 24), false}, entry{"a/version", []byte("3"), false})
		checkAttack(t, attack{want: ErrByteOrder, where: "want little, got \"big\""}, f)
	})
}

// TestEveryOtherOpcodeRefused tries every byte that is not an allowed
// opcode.
func TestEveryOtherOpcodeRefused(t *testing.T) {
	for op := 0; op < 256; op++ {
		if _, ok := opNames[byte(op)]; ok {
			continue
		}
		m := &vm{buf: []byte{opProto, 2, byte(op), 0, 0, 0, 0, 0, 0, 0, 0}, lim: DefaultLimits}
		if _, _, err := m.run(); !errors.Is(err, ErrOpcode) {
			t.Errorf("opcode 0x%02x: want ErrOpcode, got %v", op, err)
		}
	}
}

func TestLong1(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want int64
	}{{nil, 0}, {[]byte{0xff}, -1}, {[]byte{0x00, 0x80}, -32768}, {[]byte{0xff, 0x00}, 255}, {[]byte{1, 0, 0, 0, 0, 0, 0, 0x80}, -1<<63 + 1}} {
		m := &vm{buf: append(append([]byte{opLong1, byte(len(tc.b))}, tc.b...), opStop), lim: DefaultLimits}
		v, _, err := m.run()
		if err != nil || v != tc.want {
			t.Errorf("LONG1 % x: want %d, got %v (%v)", tc.b, tc.want, v, err)
		}
	}
}

// TestFileShrinks reads a tensor after its file was truncated.
func TestFileShrinks(t *testing.T) {
	b, err := os.ReadFile("testdata/proto4.pth")
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "x.pth")
	os.WriteFile(name, b, 0o644)
	r, err := OpenReader(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Truncate(name, 100); err != nil {
		t.Fatal(err)
	}
	x := r.Tensors[0]
	if _, err := x.ReadAt(make([]byte, x.Len()), 0); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "file offset") {
		t.Errorf("want ErrTruncated naming the offset, got %v", err)
	}
}
