package pth

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Pickle opcodes the VM executes. Every other byte is refused.
const (
	opMark           = '('
	opStop           = '.'
	opBinInt         = 'J'
	opBinInt1        = 'K'
	opBinInt2        = 'M'
	opNone           = 'N'
	opBinPersID      = 'Q'
	opReduce         = 'R'
	opBinUnicode     = 'X'
	opAppend         = 'a'
	opBuild          = 'b'
	opGlobal         = 'c'
	opAppends        = 'e'
	opBinGet         = 'h'
	opLongBinGet     = 'j'
	opEmptyList      = ']'
	opBinPut         = 'q'
	opLongBinPut     = 'r'
	opSetItem        = 's'
	opTuple          = 't'
	opSetItems       = 'u'
	opEmptyDict      = '}'
	opEmptyTuple     = ')'
	opBinFloat       = 'G'
	opProto          = 0x80
	opTuple1         = 0x85
	opTuple2         = 0x86
	opTuple3         = 0x87
	opNewTrue        = 0x88
	opNewFalse       = 0x89
	opLong1          = 0x8a
	opShortBinUni    = 0x8c
	opBinUnicode8    = 0x8d
	opStackGlobal    = 0x93
	opMemoize        = 0x94
	opFrame          = 0x95
	maxGlobalNameLen = 256
)

var opNames = map[byte]string{
	opMark: "MARK", opStop: "STOP", opBinInt: "BININT", opBinInt1: "BININT1", opBinInt2: "BININT2",
	opNone: "NONE", opBinPersID: "BINPERSID", opReduce: "REDUCE", opBinUnicode: "BINUNICODE",
	opAppend: "APPEND", opBuild: "BUILD", opGlobal: "GLOBAL", opAppends: "APPENDS", opBinGet: "BINGET",
	opLongBinGet: "LONG_BINGET", opEmptyList: "EMPTY_LIST", opBinPut: "BINPUT", opLongBinPut: "LONG_BINPUT",
	opSetItem: "SETITEM", opTuple: "TUPLE", opSetItems: "SETITEMS", opEmptyDict: "EMPTY_DICT",
	opEmptyTuple: "EMPTY_TUPLE", opBinFloat: "BINFLOAT", opProto: "PROTO", opTuple1: "TUPLE1",
	opTuple2: "TUPLE2", opTuple3: "TUPLE3", opNewTrue: "NEWTRUE", opNewFalse: "NEWFALSE", opLong1: "LONG1",
	opShortBinUni: "SHORT_BINUNICODE", opBinUnicode8: "BINUNICODE8", opStackGlobal: "STACK_GLOBAL",
	opMemoize: "MEMOIZE", opFrame: "FRAME",
}

func opName(op byte) string {
	if n, ok := opNames[op]; ok {
		return n
	}
	if op >= 0x20 && op < 0x7f {
		return fmt.Sprintf("%q (0x%02x)", op, op)
	}
	return fmt.Sprintf("0x%02x", op)
}

// Inert values the VM builds. Python's None is nil, int is int64, float is
// float64, str is string, bool is bool.
type (
	tuple []any
	list  struct{ items []any }
	dict  struct {
		keys, vals []any
		index      map[any]int
		ordered    bool
	}
)

// newDict returns an empty dict; its index is made on the first item, so
// an empty dict costs one small allocation.
func newDict(ordered bool) *dict { return &dict{ordered: ordered} }

// get returns the value under a string key.
func (d *dict) get(k string) (any, bool) {
	i, ok := d.index[k]
	if !ok {
		return nil, false
	}
	return d.vals[i], true
}

// vm is the restricted pickle machine. It never calls anything: globals are
// looked up in a fixed table and become inert values, and REDUCE applies
// only the few constructors a tensor state dict uses.
type vm struct {
	buf   []byte
	pos   int
	base  int64 // offset of buf[0] in the file, for messages
	lim   Limits
	stack []any
	marks []int
	memo  map[uint32]any
	ops   int
	op    byte
	opPos int
	// persistentLoad resolves a BINPERSID id to a *Storage.
	persistentLoad func(pid tuple) (any, error)
	tensors        int
}

func (m *vm) errf(sentinel error, format string, args ...any) error {
	return &PickleError{Offset: m.base + int64(m.opPos), Op: m.op, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

// run executes the pickle from the start of buf up to STOP and returns its
// value and the number of bytes consumed.
func (m *vm) run() (any, int, error) {
	m.memo = map[uint32]any{}
	for {
		if m.pos >= len(m.buf) {
			m.opPos, m.op = m.pos, 0
			return nil, 0, m.errf(ErrTruncated, "pickle ends without STOP")
		}
		m.opPos, m.op = m.pos, m.buf[m.pos]
		m.pos++
		if m.ops++; m.ops > m.lim.MaxOps {
			return nil, 0, m.errf(ErrLimit, "more than %d opcodes", m.lim.MaxOps)
		}
		if m.op == opStop {
			v, err := m.stop()
			return v, m.pos, err
		}
		if err := m.step(); err != nil {
			return nil, 0, err
		}
		if len(m.stack) > m.lim.MaxStack {
			return nil, 0, m.errf(ErrLimit, "stack deeper than %d", m.lim.MaxStack)
		}
	}
}

func (m *vm) stop() (any, error) {
	if len(m.marks) != 0 || len(m.stack) != 1 {
		return nil, m.errf(ErrPickle, "STOP with %d values and %d open marks: want 1 value, no marks", len(m.stack), len(m.marks))
	}
	return m.stack[0], nil
}

// step executes one opcode.
func (m *vm) step() error {
	switch m.op {
	case opProto:
		b, err := m.read(1)
		if err == nil && b[0] > 5 {
			return m.errf(ErrUnsupported, "pickle protocol %d", b[0])
		}
		return err
	case opFrame:
		b, err := m.read(8)
		if err == nil && binary.LittleEndian.Uint64(b) > uint64(len(m.buf)-m.pos) {
			return m.errf(ErrTruncated, "frame of %d bytes, %d left", binary.LittleEndian.Uint64(b), len(m.buf)-m.pos)
		}
		return err
	case opMark:
		if len(m.marks) >= m.lim.MaxMarks {
			return m.errf(ErrLimit, "MARK nested deeper than %d", m.lim.MaxMarks)
		}
		m.marks = append(m.marks, len(m.stack))
		return nil
	case opNone, opNewTrue, opNewFalse, opEmptyTuple, opEmptyList, opEmptyDict:
		m.push(constant(m.op))
		return nil
	case opBinInt, opBinInt1, opBinInt2, opLong1, opBinFloat:
		return m.number()
	case opBinUnicode, opShortBinUni, opBinUnicode8:
		return m.unicode()
	case opBinPut, opLongBinPut, opMemoize:
		return m.put()
	case opBinGet, opLongBinGet:
		return m.get()
	case opTuple, opTuple1, opTuple2, opTuple3:
		return m.tuple()
	case opAppend, opAppends:
		return m.appends()
	case opSetItem, opSetItems:
		return m.setItems()
	case opGlobal, opStackGlobal:
		return m.global()
	case opReduce:
		return m.reduce()
	case opBuild:
		return m.build()
	case opBinPersID:
		return m.persID()
	}
	return m.errf(ErrOpcode, "opcode outside the state-dict allow-list")
}

func constant(op byte) any {
	switch op {
	case opNewTrue:
		return true
	case opNewFalse:
		return false
	case opEmptyTuple:
		return tuple{}
	case opEmptyList:
		return &list{}
	case opEmptyDict:
		return newDict(false)
	}
	return nil
}

func (m *vm) push(v any) { m.stack = append(m.stack, v) }

func (m *vm) pop() (any, error) {
	floor := 0
	if len(m.marks) > 0 {
		floor = m.marks[len(m.marks)-1]
	}
	if len(m.stack) <= floor {
		return nil, m.errf(ErrPickle, "stack underflow")
	}
	v := m.stack[len(m.stack)-1]
	m.stack = m.stack[:len(m.stack)-1]
	return v, nil
}

// popMark removes the values above the last MARK and the mark itself.
func (m *vm) popMark() ([]any, error) {
	if len(m.marks) == 0 {
		return nil, m.errf(ErrPickle, "no MARK")
	}
	at := m.marks[len(m.marks)-1]
	m.marks = m.marks[:len(m.marks)-1]
	items := m.stack[at:]
	m.stack = m.stack[:at]
	return items, nil
}

func (m *vm) read(n int) ([]byte, error) {
	if n < 0 || n > len(m.buf)-m.pos {
		return nil, m.errf(ErrTruncated, "operand of %d bytes, %d left", n, len(m.buf)-m.pos)
	}
	b := m.buf[m.pos : m.pos+n]
	m.pos += n
	return b, nil
}

func (m *vm) number() error {
	b, err := m.read(operandSize(m.op))
	if err != nil {
		return err
	}
	switch m.op {
	case opBinInt:
		m.push(int64(int32(binary.LittleEndian.Uint32(b))))
	case opBinInt1:
		m.push(int64(b[0]))
	case opBinInt2:
		m.push(int64(binary.LittleEndian.Uint16(b)))
	case opBinFloat:
		m.push(math.Float64frombits(binary.BigEndian.Uint64(b)))
	case opLong1:
		return m.long1(int(b[0]))
	}
	return nil
}

func operandSize(op byte) int {
	switch op {
	case opBinInt:
		return 4
	case opBinInt2:
		return 2
	case opBinFloat:
		return 8
	}
	return 1
}

// long1 decodes a little-endian two's-complement integer of n bytes.
func (m *vm) long1(n int) error {
	if n > 8 {
		return m.errf(ErrUnsupported, "integer of %d bytes: only 64-bit integers are supported", n)
	}
	b, err := m.read(n)
	if err != nil {
		return err
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	if n > 0 && n < 8 && b[n-1]&0x80 != 0 {
		v |= ^uint64(0) << (8 * n)
	}
	m.push(int64(v))
	return nil
}

func (m *vm) unicode() error {
	var n uint64
	switch m.op {
	case opShortBinUni:
		b, err := m.read(1)
		if err != nil {
			return err
		}
		n = uint64(b[0])
	case opBinUnicode:
		b, err := m.read(4)
		if err != nil {
			return err
		}
		n = uint64(binary.LittleEndian.Uint32(b))
	default:
		b, err := m.read(8)
		if err != nil {
			return err
		}
		n = binary.LittleEndian.Uint64(b)
	}
	if n > uint64(m.lim.MaxString) {
		return m.errf(ErrLimit, "string of %d bytes, limit %d", n, m.lim.MaxString)
	}
	b, err := m.read(int(n))
	if err != nil {
		return err
	}
	if !utf8.Valid(b) {
		return m.errf(ErrPickle, "string is not valid UTF-8")
	}
	m.push(string(b))
	return nil
}

func (m *vm) put() error {
	var idx uint32
	switch m.op {
	case opBinPut:
		b, err := m.read(1)
		if err != nil {
			return err
		}
		idx = uint32(b[0])
	case opLongBinPut:
		b, err := m.read(4)
		if err != nil {
			return err
		}
		idx = binary.LittleEndian.Uint32(b)
	default:
		idx = uint32(len(m.memo))
	}
	if len(m.stack) == 0 {
		return m.errf(ErrPickle, "memo store with an empty stack")
	}
	if _, ok := m.memo[idx]; !ok && len(m.memo) >= m.lim.MaxMemo {
		return m.errf(ErrLimit, "more than %d memo entries", m.lim.MaxMemo)
	}
	m.memo[idx] = m.stack[len(m.stack)-1]
	return nil
}

func (m *vm) get() error {
	var idx uint32
	if m.op == opBinGet {
		b, err := m.read(1)
		if err != nil {
			return err
		}
		idx = uint32(b[0])
	} else {
		b, err := m.read(4)
		if err != nil {
			return err
		}
		idx = binary.LittleEndian.Uint32(b)
	}
	v, ok := m.memo[idx]
	if !ok {
		return m.errf(ErrPickle, "memo index %d was never stored", idx)
	}
	m.push(v)
	return nil
}

func (m *vm) tuple() error {
	var items []any
	if m.op == opTuple {
		var err error
		if items, err = m.popMark(); err != nil {
			return err
		}
	} else {
		n := int(m.op - opTuple1 + 1)
		for range n {
			v, err := m.pop()
			if err != nil {
				return err
			}
			items = append(items, v)
		}
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	if len(items) > m.lim.MaxItems {
		return m.errf(ErrLimit, "tuple of %d items, limit %d", len(items), m.lim.MaxItems)
	}
	m.push(tuple(append([]any(nil), items...)))
	return nil
}

func (m *vm) appends() error {
	items, err := m.popItems(opAppend)
	if err != nil {
		return err
	}
	l, ok := m.top().(*list)
	if !ok {
		return m.errf(ErrPickle, "append to %s: want a list", typeName(m.top()))
	}
	if len(l.items)+len(items) > m.lim.MaxItems {
		return m.errf(ErrLimit, "list of more than %d items", m.lim.MaxItems)
	}
	l.items = append(l.items, items...)
	return nil
}

// popItems pops one value for the single-item opcode, else the values
// above the last MARK.
func (m *vm) popItems(single byte) ([]any, error) {
	if m.op == single {
		v, err := m.pop()
		return []any{v}, err
	}
	items, err := m.popMark()
	return append([]any(nil), items...), err
}

func (m *vm) top() any {
	if len(m.stack) == 0 {
		return nil
	}
	return m.stack[len(m.stack)-1]
}

func (m *vm) setItems() error {
	var items []any
	if m.op == opSetItem {
		v, err := m.pop()
		if err != nil {
			return err
		}
		k, err := m.pop()
		if err != nil {
			return err
		}
		items = []any{k, v}
	} else {
		var err error
		if items, err = m.popItems(0); err != nil {
			return err
		}
	}
	if len(items)%2 != 0 {
		return m.errf(ErrPickle, "SETITEMS with %d values: want key, value pairs", len(items))
	}
	d, ok := m.top().(*dict)
	if !ok {
		return m.errf(ErrPickle, "set item on %s: want a dict", typeName(m.top()))
	}
	for i := 0; i < len(items); i += 2 {
		if err := m.setItem(d, items[i], items[i+1]); err != nil {
			return err
		}
	}
	return nil
}

func (m *vm) setItem(d *dict, k, v any) error {
	switch k.(type) {
	case string, int64:
	default:
		return m.errf(ErrKeyType, "dict key of type %s: want str or int", typeName(k))
	}
	if _, dup := d.index[k]; dup {
		return m.errf(ErrDuplicateKey, "key %v set twice", k)
	}
	if len(d.keys) >= m.lim.MaxItems {
		return m.errf(ErrLimit, "dict of more than %d items", m.lim.MaxItems)
	}
	if d.index == nil {
		d.index = map[any]int{}
	}
	d.index[k] = len(d.keys)
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	return nil
}

func (m *vm) global() error {
	var module, name string
	if m.op == opGlobal {
		var err error
		if module, err = m.line(); err != nil {
			return err
		}
		if name, err = m.line(); err != nil {
			return err
		}
	} else {
		n, err1 := m.pop()
		mod, err2 := m.pop()
		var ok1, ok2 bool
		name, ok1 = n.(string)
		module, ok2 = mod.(string)
		if err1 != nil || err2 != nil || !ok1 || !ok2 {
			return m.errf(ErrPickle, "STACK_GLOBAL wants two strings")
		}
	}
	g, err := lookupGlobal(module, name)
	if err != nil {
		return m.errf(err, "%s.%s", module, name)
	}
	m.push(g)
	return nil
}

// line reads a GLOBAL operand: printable ASCII up to a newline.
func (m *vm) line() (string, error) {
	rest := m.buf[m.pos:min(len(m.buf), m.pos+maxGlobalNameLen+1)]
	i := strings.IndexByte(string(rest), '\n')
	switch {
	case i < 0 && len(rest) <= maxGlobalNameLen:
		return "", m.errf(ErrTruncated, "GLOBAL operand runs past the end of the pickle")
	case i < 0:
		return "", m.errf(ErrPickle, "GLOBAL operand without a newline within %d bytes", maxGlobalNameLen)
	}
	s := string(rest[:i])
	for _, c := range []byte(s) {
		if c < 0x21 || c > 0x7e {
			return "", m.errf(ErrPickle, "GLOBAL operand %q is not a dotted name", s)
		}
	}
	m.pos += i + 1
	return s, nil
}

func (m *vm) reduce() error {
	a, err := m.pop()
	if err != nil {
		return err
	}
	f, err := m.pop()
	if err != nil {
		return err
	}
	args, ok := a.(tuple)
	if !ok {
		return m.errf(ErrArgs, "REDUCE arguments are %s: want a tuple", typeName(a))
	}
	g, ok := f.(*global)
	if !ok {
		return m.errf(ErrArgs, "REDUCE of %s: want an allowed constructor", typeName(f))
	}
	v, err := m.apply(g, args)
	if err != nil {
		return err
	}
	m.push(v)
	return nil
}

func (m *vm) build() error {
	state, err := m.pop()
	if err != nil {
		return err
	}
	d, ok := m.top().(*dict)
	if !ok || !d.ordered {
		return m.errf(ErrPickle, "BUILD on %s: only an OrderedDict's attributes may be set", typeName(m.top()))
	}
	if s, ok := state.(*dict); !ok || !stringKeys(s) {
		return m.errf(ErrArgs, "BUILD state is %s: want a dict of attributes", typeName(state))
	}
	return nil
}

func stringKeys(d *dict) bool {
	for _, k := range d.keys {
		if _, ok := k.(string); !ok {
			return false
		}
	}
	return true
}

func (m *vm) persID() error {
	v, err := m.pop()
	if err != nil {
		return err
	}
	pid, ok := v.(tuple)
	if !ok {
		return m.errf(ErrPersID, "persistent id is %s: want a tuple", typeName(v))
	}
	if m.persistentLoad == nil {
		return m.errf(ErrPersID, "persistent id in a pickle that may not hold storages")
	}
	s, err := m.persistentLoad(pid)
	if err != nil {
		return m.errf(err, "storage")
	}
	m.push(s)
	return nil
}

// typeName names a VM value's Python type for messages.
func typeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case tuple:
		return "tuple"
	case *list:
		return "list"
	case *dict:
		if v.ordered {
			return "OrderedDict"
		}
		return "dict"
	case *global:
		return v.module + "." + v.name
	case *Storage:
		return "storage"
	case *Tensor:
		return "tensor"
	}
	return fmt.Sprintf("%T", v)
}
