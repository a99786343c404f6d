package engine

import (
	"encoding/binary"
	"math"

	"torchtpu/dispatch"
)

// intRange is the smallest and largest value of an int64, int32 or bool
// storage whose whole value was last written from the host or by a rule that
// bounds its result (dispatch.RangeFn). Index checks consult it instead of
// reading the indices back from the device, so ids uploaded once and used by
// several index ops cost no sync; a host read of a storage whose range is one
// value reads nothing (pointValue).
type intRange struct{ lo, hi int64 }

// hostIntRange returns the range of host bytes of dtype d, or nil for other
// dtypes and empty data.
func hostIntRange(src []byte, d dispatch.DType) *intRange {
	size := d.Size()
	if !rangedDType(d) || len(src) < size {
		return nil
	}
	at := func(i int) int64 {
		switch d {
		case dispatch.Int64:
			return int64(binary.LittleEndian.Uint64(src[i:]))
		case dispatch.Int32:
			return int64(int32(binary.LittleEndian.Uint32(src[i:])))
		}
		if src[i] != 0 {
			return 1
		}
		return 0
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
		if st == nil || st.dtype != t.DType || !rangedDType(t.DType) || !(whole || t.offsetFreeWhole(st.shape)) {
			continue
		}
		if t.DType == dispatch.Int32 && (r[0] < math.MinInt32 || r[1] > math.MaxInt32) {
			continue // a wider result stored as int32 wraps
		}
		if t.DType == dispatch.Bool && (r[0] < 0 || r[1] > 1) {
			continue // a wider result stored as bool becomes 0 or 1
		}
		st.known = &intRange{r[0], r[1]}
	}
}

// rangedDType says whether the engine keeps value ranges of storages of dtype d.
func rangedDType(d dispatch.DType) bool {
	return d == dispatch.Int64 || d == dispatch.Int32 || d == dispatch.Bool
}

// pointValue fills dst, the host bytes of view t of storage st, without a
// device read when every value of st is known to be one number (a range of
// one value): a flag such as `(ids < 0).any()` computed from uploaded ids.
// It reports whether it did. Captures and step replays read as usual: their
// reads are part of what they record.
func (e *Engine) pointValue(st *Storage, t *TensorDesc, dst []byte) bool {
	k := st.known
	if k == nil || k.lo != k.hi || !st.shaped || st.dtype != t.DType || !rangedDType(t.DType) ||
		e.capturing() || e.replayHolds(st) {
		return false
	}
	size := t.DType.Size()
	for i := 0; i+size <= len(dst); i += size {
		switch t.DType {
		case dispatch.Int64:
			binary.LittleEndian.PutUint64(dst[i:], uint64(k.lo))
		case dispatch.Int32:
			binary.LittleEndian.PutUint32(dst[i:], uint32(int32(k.lo)))
		default:
			dst[i] = byte(k.lo)
		}
	}
	e.m.PointReads++
	return true
}
