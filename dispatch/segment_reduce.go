package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// segLayout is the view segment_reduce takes of its data: outer dimensions
// (before axis) flattened to O, the reduced axis of length N, S segments, and
// the inner dimensions flattened to I.
type segLayout struct {
	O, N, S, I int64
	outShape   []int64    // data's shape with axis replaced by S
	member     *hlo.Value // [O, N, S] pred: row n of outer o lies in segment s
	length     *hlo.Value // [O, S] int64 segment lengths
}

// segmentLayout reads lengths (argument li) or offsets (argument oi) and builds
// the segment membership of every row along axis, all on the device.
func (c *Ctx) segmentLayout(data TensorMeta, li, oi, axisArg int) (*segLayout, error) {
	b := c.B
	axis, err := wrapDim(c.Int(axisArg, 0), data.Rank())
	if err != nil {
		return nil, err
	}
	l := &segLayout{O: numel(data.Sizes[:axis]), N: data.Sizes[axis], I: numel(data.Sizes[axis+1:])}
	var start, end *hlo.Value
	switch {
	case c.Has(li):
		lm := c.Meta(li)
		if lm.Rank() != int(axis)+1 {
			return nil, Errorf("segment_reduce(): Expected lengths to have %d dimensions, got %d", axis+1, lm.Rank())
		}
		l.S = lm.Sizes[axis]
		lens := b.Convert(b.Reshape(c.T(li), l.O, l.S), hlo.S64)
		// end[o, s] = sum over t <= s of lens[o, t].
		sq := []int64{l.O, l.S, l.S}
		tri := b.Compare(hlo.LE, b.Iota(hlo.T(hlo.S64, sq...), 1), b.Iota(hlo.T(hlo.S64, sq...), 2))
		spread := b.BroadcastInDim(lens, sq, []int64{0, 1})
		end = b.Reduce(b.Select(tri, spread, full(b, Int64, sq, 0)), b.Scalar(hlo.S64, 0), hlo.ReduceSum, 1)
		start = b.Sub(end, lens)
	case c.Has(oi):
		om := c.Meta(oi)
		if om.Rank() != int(axis)+1 {
			return nil, Errorf("segment_reduce(): Expected offsets to have %d dimensions, got %d", axis+1, om.Rank())
		}
		l.S = om.Sizes[axis] - 1
		offs := b.Convert(b.Reshape(c.T(oi), l.O, l.S+1), hlo.S64)
		start = b.Slice(offs, []int64{0, 0}, []int64{l.O, l.S}, []int64{1, 1})
		end = b.Slice(offs, []int64{0, 1}, []int64{l.O, l.S + 1}, []int64{1, 1})
	default:
		return nil, Errorf("segment_reduce(): Either lengths or offsets must be defined")
	}
	l.length = b.Sub(end, start)
	ons := []int64{l.O, l.N, l.S}
	row := b.Iota(hlo.T(hlo.S64, ons...), 1)
	l.member = b.And(b.Compare(hlo.GE, row, b.BroadcastInDim(start, ons, []int64{0, 2})),
		b.Compare(hlo.LT, row, b.BroadcastInDim(end, ons, []int64{0, 2})))
	l.outShape = append(append(append([]int64{}, data.Sizes[:axis]...), l.S), data.Sizes[axis+1:]...)
	return l, nil
}

// checkLengths makes CPU's checks on lengths (argument 2) unless unsafe
// (argument 6) is set: no negative length, and each row sums to data's size
// along axis. It reads lengths on the host, before any tensor value is read.
func (c *Ctx) checkLengths(data TensorMeta) error {
	if c.Bool(6, false) || !c.Has(2) {
		return nil
	}
	axis, err := wrapDim(c.Int(5, 0), data.Rank())
	if err != nil {
		return err
	}
	lens, err := c.R.Int64s(c.Args[2].Handles[0])
	if err != nil {
		return err
	}
	lm := c.Meta(2)
	s := int64(1)
	if lm.Rank() > 0 {
		s = lm.Sizes[lm.Rank()-1]
	}
	for start := int64(0); start < int64(len(lens)); start += max(s, 1) {
		sum := int64(0)
		for _, v := range lens[start:min(start+max(s, 1), int64(len(lens)))] {
			if v < 0 {
				return Errorf("lengths contains negative value!")
			}
			sum += v
		}
		if sum != data.Sizes[axis] {
			return Errorf("segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe.")
		}
	}
	return nil
}

// spreadRows broadcasts a [O, N, I] value to [O, N, S, I].
func (l *segLayout) spreadRows(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return b.BroadcastInDim(x, []int64{l.O, l.N, l.S, l.I}, []int64{0, 1, 3})
}

// spreadSegs broadcasts a [O, S, I] value to [O, N, S, I].
func (l *segLayout) spreadSegs(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return b.BroadcastInDim(x, []int64{l.O, l.N, l.S, l.I}, []int64{0, 2, 3})
}

// mask broadcasts the membership to [O, N, S, I].
func (l *segLayout) mask(b *hlo.Builder) *hlo.Value {
	return b.BroadcastInDim(l.member, []int64{l.O, l.N, l.S, l.I}, []int64{0, 1, 2})
}

// segIdentity returns the reduction's identity, CPU's start value without initial.
func segIdentity(reduce string, e hlo.Elem) (float64, hlo.Reducer, error) {
	switch reduce {
	case "sum", "mean":
		return 0, hlo.ReduceSum, nil
	case "prod":
		return 1, hlo.ReduceMul, nil
	case "max":
		return hlo.Lowest(e), hlo.ReduceMax, nil
	case "min":
		return hlo.Highest(e), hlo.ReduceMin, nil
	}
	return 0, "", Errorf("segment_reduce(): unsupported reduction %s", reduce)
}

// segmentReduce is segment_reduce(data, reduce, *, lengths, indices, offsets,
// axis, unsafe, initial): each segment of data along axis reduced to one
// entry. Empty segments give initial, or the reduction's identity (NaN for mean).
func segmentReduce(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if err := c.checkLengths(m); err != nil {
		return nil, err
	}
	l, err := c.segmentLayout(m, 2, 4, 5)
	if err != nil {
		return nil, err
	}
	b, d := c.B, opmathType(m.DType)
	e := d.Elem()
	reduce := c.Str(1, "")
	id, r, err := segIdentity(reduce, e)
	if err != nil {
		return nil, err
	}
	four := []int64{l.O, l.N, l.S, l.I}
	x := l.spreadRows(b, b.Reshape(b.Convert(c.T(0), e), l.O, l.N, l.I))
	out := b.Reduce(b.Select(l.mask(b), x, full(b, d, four, id)), b.Scalar(e, id), r, 1)
	osi := []int64{l.O, l.S, l.I}
	lens := b.BroadcastInDim(l.length, osi, []int64{0, 1})
	if c.Has(7) {
		init := b.BroadcastTo(c.R.Scalar(c.Float(7, 0), e), osi)
		switch reduce {
		case "sum", "mean":
			out = b.Add(out, init)
		case "prod":
			out = b.Mul(out, init)
		case "max":
			out = b.Max(out, init)
		case "min":
			out = b.Min(out, init)
		}
	}
	if reduce == "mean" {
		empty := b.Compare(hlo.EQ, lens, full(b, Int64, osi, 0))
		div := b.Div(out, b.Convert(b.Select(empty, full(b, Int64, osi, 1), lens), e))
		emptyVal := out
		if !c.Has(7) {
			emptyVal = full(b, d, osi, math.NaN())
		}
		out = b.Select(empty, emptyVal, div)
	}
	return []*hlo.Value{b.Reshape(b.Convert(out, m.DType.Elem()), l.outShape...)}, nil
}

// segmentReduceBackward is _segment_reduce_backward(grad, output, data,
// reduce, *, lengths, offsets, axis, initial), following CPU's kernel: ties of
// max/min share a positive gradient, prod divides by the element except at
// zeros and NaNs, where the product of the others is used.
func segmentReduceBackward(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(2)
	l, err := c.segmentLayout(m, 4, 5, 6)
	if err != nil {
		return nil, err
	}
	b, d := c.B, opmathType(m.DType)
	e := d.Elem()
	four := []int64{l.O, l.N, l.S, l.I}
	osi := []int64{l.O, l.S, l.I}
	mask := l.mask(b)
	g := l.spreadSegs(b, b.Reshape(c.B.Convert(c.T(0), e), osi...))
	out := l.spreadSegs(b, b.Reshape(c.B.Convert(c.T(1), e), osi...))
	x := l.spreadRows(b, b.Reshape(b.Convert(c.T(2), e), l.O, l.N, l.I))
	zero := full(b, d, four, 0)
	sumSegs := func(v *hlo.Value) *hlo.Value { // [O,N,S,I] -> [O,S,I] over members
		return b.Reduce(b.Select(mask, v, zero), b.Scalar(e, 0), hlo.ReduceSum, 1)
	}
	var gi *hlo.Value
	switch reduce := c.Str(3, ""); reduce {
	case "sum":
		gi = g
	case "mean":
		lens := b.Convert(b.BroadcastInDim(l.length, four, []int64{0, 2}), e)
		gi = b.Div(g, b.Max(lens, full(b, d, four, 1)))
	case "max", "min":
		hit := b.Or(b.Compare(hlo.NE, x, x), b.Compare(hlo.EQ, x, out))
		cnt := l.spreadSegs(b, sumSegs(b.Select(hit, full(b, d, four, 1), zero)))
		share := b.And(b.Compare(hlo.GE, cnt, full(b, d, four, 2)), b.Compare(hlo.GT, g, zero))
		gi = b.Select(hit, b.Select(share, b.Div(g, cnt), g), zero)
	case "prod":
		isNaN := b.Compare(hlo.NE, x, x)
		isZero := b.Compare(hlo.EQ, x, zero)
		special := b.Or(isNaN, isZero)
		one := full(b, d, four, 1)
		rest := b.Select(b.And(mask, b.Not(special)), x, one)
		prodRest := b.Reduce(rest, b.Scalar(e, 1), hlo.ReduceMul, 1)
		if c.Has(7) {
			prodRest = b.Mul(prodRest, b.BroadcastTo(c.R.Scalar(c.Float(7, 0), e), osi))
		}
		nNaN := l.spreadSegs(b, sumSegs(b.Select(isNaN, one, zero)))
		nZero := l.spreadSegs(b, sumSegs(b.Select(isZero, one, zero)))
		otherNaN := b.Sub(nNaN, b.Select(isNaN, one, zero))
		otherZero := b.Sub(nZero, b.Select(isZero, one, zero))
		excl := b.Select(b.Compare(hlo.GT, otherZero, zero), zero, l.spreadSegs(b, prodRest))
		excl = b.Select(b.Compare(hlo.GT, otherNaN, zero), full(b, d, four, math.NaN()), excl)
		gi = b.Select(special, b.Mul(g, excl), b.Div(b.Mul(g, out), x))
	default:
		return nil, Errorf("segment_reduce(): unsupported reduction %s", reduce)
	}
	r := b.Reduce(b.Select(mask, gi, zero), b.Scalar(e, 0), hlo.ReduceSum, 2)
	return []*hlo.Value{b.Reshape(b.Convert(r, m.DType.Elem()), m.Sizes...)}, nil
}

// opmathType is the dtype CPU kernels accumulate half types in.
func opmathType(d DType) DType {
	if d == Float16 || d == BFloat16 {
		return Float32
	}
	return d
}

func init() {
	def("aten::segment_reduce", segmentReduce).Needs = hostArgs(2)
	def("aten::_segment_reduce_backward", segmentReduceBackward)
}
