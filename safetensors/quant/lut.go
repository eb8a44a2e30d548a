package quant

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/drama-tts/drama/safetensors/dtype"
)

// QuantizeBlockFP8 quantizes a block-FP8 matrix straight to NVFP4 with the
// global scale global, giving the same bytes as Dequantize followed by
// QuantizeNVFP4 at a fraction of the cost. Inside one 128 x 128 block every
// element's value depends only on its byte, so a 16-block's scale depends
// only on its largest byte m, and each element's code only on (byte, m): the
// kernel builds one small code table per (block, m) seen and then quantizes
// by table lookup. src must be valid (see BlockFP8.Validate); src.Cols must
// be a multiple of 16.
func QuantizeBlockFP8(q *NVFP4, src *BlockFP8, global float32, bf16 bool) {
	q.Global = global
	k := kernels.Get().(*lutKernel)
	defer kernels.Put(k)
	_, bc := BlockDims(src.Rows, src.Cols)
	k.reset(src, q, global, bf16, bc)
	for r := range src.Rows {
		if r%FP8Block == 0 {
			k.startBand(r)
		}
		k.row(r)
	}
}

// kernels recycles the table storage (about 0.5 MB for a 2048-column
// matrix) from one matrix to the next.
var kernels = sync.Pool{New: func() any { return &lutKernel{} }}

func (k *lutKernel) reset(src *BlockFP8, q *NVFP4, global float32, bf16 bool, bc int) {
	k.src, k.q, k.global, k.sixG, k.bf16 = src, q, global, 6*global, bf16
	clear(k.th[:])
	if cap(k.tables) < bc*128 {
		k.tables = make([]codeTable, bc*128)
		k.vals = make([][128]float32, bc)
	}
	k.tables, k.vals = k.tables[:bc*128], k.vals[:bc]
}

// codeTable maps an FP8 byte to its E2M1 code for one (block, largest byte).
type codeTable struct {
	ready bool
	scale uint8
	code  [256]uint8
}

type lutKernel struct {
	src          *BlockFP8
	q            *NVFP4
	global, sixG float32
	bf16         bool
	tables       []codeTable    // per block column, per largest byte
	vals         [][128]float32 // per block column: value of each magnitude byte
	th           [128]*thresholds
}

// startBand resets the tables for the row band starting at row r.
func (k *lutKernel) startBand(r int) {
	for i := range k.tables {
		k.tables[i].ready = false
	}
	for bcol := range k.vals {
		s := k.src.scale(r, bcol*FP8Block)
		for m := range 128 {
			v := dtype.E4M3ToF32(uint8(m)) * s
			if k.bf16 {
				v = dtype.RoundBF16(v)
			}
			k.vals[bcol][m] = v
		}
	}
}

// table returns the code table of block column bcol for largest byte m.
func (k *lutKernel) table(bcol int, m uint8) *codeTable {
	t := &k.tables[bcol*128+int(m)]
	if t.ready {
		return t
	}
	vals := &k.vals[bcol]
	var div float32
	t.scale, div = blockScale(vals[m], k.sixG, k.global)
	if div == 0 { // the scale underflowed: the reference's 0/0 and x/0
		for b := range int(m) + 1 {
			y := vals[b] / div
			t.code[b], t.code[b|0x80] = dtype.E2M1FromF32(y), dtype.E2M1FromF32(-y)
		}
	} else {
		k.fill(t, vals, m, k.thresholds(t.scale, div))
	}
	t.ready = true
	return t
}

// fill writes the codes of bytes 0..m. Values grow with the byte, so the
// codes do too: one walk up the seven thresholds places every byte.
func (k *lutKernel) fill(t *codeTable, vals *[128]float32, m uint8, th *thresholds) {
	c := 0
	for b := range int(m) + 1 {
		v := uint64(math.Float32bits(vals[b]))
		for c < len(th.t) && v >= th.t[c] {
			c++
		}
		t.code[b] = uint8(c)
		t.code[b|0x80] = uint8(c) | uint8((th.nz-v-1)>>63)<<3
	}
}

// thresholds returns the thresholds of a block scale byte, built once per
// matrix (the divisor depends only on the byte and the global scale).
func (k *lutKernel) thresholds(scale uint8, div float32) *thresholds {
	if k.th[scale&0x7F] == nil {
		k.th[scale&0x7F] = newThresholds(div)
	}
	return k.th[scale&0x7F]
}

func (k *lutKernel) row(r int) {
	cols := k.src.Cols
	w := k.src.Weight[r*cols : (r+1)*cols]
	packed := k.q.Packed[r*cols/2 : (r+1)*cols/2]
	scales := k.q.Scales[r*cols/GroupSize : (r+1)*cols/GroupSize]
	for g := range cols / GroupSize {
		blk := w[g*GroupSize : (g+1)*GroupSize : (g+1)*GroupSize]
		m := reduceLanes(maxLanes(binary.LittleEndian.Uint64(blk)&lanes7, binary.LittleEndian.Uint64(blk[8:])&lanes7))
		t := k.table(g*GroupSize/FP8Block, m)
		scales[g] = t.scale
		out := packed[g*GroupSize/2 : (g+1)*GroupSize/2 : (g+1)*GroupSize/2]
		for i := range out {
			out[i] = t.code[blk[2*i]] | t.code[blk[2*i+1]]<<4
		}
	}
}
