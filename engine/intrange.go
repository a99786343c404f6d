package engine

import (
	"encoding/binary"
	"math"

	"torchtpu/dispatch"
)

// intRange is the smallest and largest value of an int64 or int32 storage
// whose whole value was last written from the host. Index checks consult it
// instead of reading the indices back from the device, so ids uploaded once
// and used by several index ops cost no sync.
type intRange struct{ lo, hi int64 }

// hostIntRange returns the range of host bytes of dtype d, or nil for other
// dtypes and empty data.
func hostIntRange(src []byte, d dispatch.DType) *intRange {
	size := d.Size()
	if (d != dispatch.Int64 && d != dispatch.Int32) || len(src) < size {
		return nil
	}
	at := func(i int) int64 {
		if d == dispatch.Int64 {
			return int64(binary.LittleEndian.Uint64(src[i:]))
		}
		return int64(int32(binary.LittleEndian.Uint32(src[i:])))
	}
	r := &intRange{at(0), at(0)}
	for i := size; i+size <= len(src); i += size {
		v := at(i)
		r.lo, r.hi = min(r.lo, v), max(r.hi, v)
	}
	return r
}

// IntRange reports the range of the values of the integer tensor h when the
// engine knows it without a device read (a view holds a subset of its
// storage's values).
func (e *Engine) IntRange(h any) (lo, hi int64, ok bool) {
	t := h.(*TensorDesc)
	if t.CPU {
		if r := hostIntRange(t.Host, t.DType); r != nil {
			return r.lo, r.hi, true
		}
		return 0, 0, false
	}
	st, found := e.storages[t.Addr]
	if !found || st.known == nil || !st.shaped || st.dtype != t.DType {
		return 0, 0, false
	}
	return st.known.lo, st.known.hi, true
}

// keepRanges gives the storages of a rule's nres results the value ranges the
// rule reported (dispatch.Ctx.KnowRange), where a result is its storage's whole
// value: a new output, self of an in-place op, or an out= argument that covers
// its storage.
func (e *Engine) keepRanges(c *dispatch.Ctx, v dispatch.Variant, args []dispatch.Arg, outs []OutTensor, nres int) {
	for i, r := range c.Ranges {
		var t *TensorDesc
		whole := false // a new output is its storage's whole value
		switch {
		case v == dispatch.Functional && i < len(outs):
			t, whole = &TensorDesc{Addr: outs[i].Addr, DType: outs[i].DType}, true
		case v == dispatch.Inplace && i == 0 && len(args) > 0 && len(args[0].Handles) == 1:
			t = args[0].Handles[0].(*TensorDesc)
		case v == dispatch.OutVariant && i < nres && nres <= len(args):
			t = args[len(args)-nres+i].Handles[0].(*TensorDesc)
		default:
			continue
		}
		st := e.storages[t.Addr]
		if st == nil || st.dtype != t.DType || (t.DType != dispatch.Int64 && t.DType != dispatch.Int32) ||
			!(whole || t.offsetFreeWhole(st.shape)) {
			continue
		}
		if t.DType == dispatch.Int32 && (r[0] < math.MinInt32 || r[1] > math.MaxInt32) {
			continue // a wider result stored as int32 wraps
		}
		st.known = &intRange{r[0], r[1]}
	}
}
