package dispatch

import (
	"torchtpu/hlo"
)

// The Jacobi methods below rotate n/2 disjoint index pairs at once: indices
// sit in pairs (0, 1), (2, 3), ... and after each round they move by the
// round-robin (circle) schedule, so that n-1 rounds (a sweep) pair every
// index with every other once. Odd n is padded with one decoupled index.

// qrSliceDim takes positions lo..hi-1 of x along dim d.
func qrSliceDim(b *hlo.Builder, x *hlo.Value, d int, lo, hi int64) *hlo.Value {
	r := x.T.Rank()
	start, limit, strides := make([]int64, r), append([]int64{}, x.T.Shape...), make([]int64, r)
	for i := range strides {
		strides[i] = 1
	}
	start[d], limit[d] = lo, hi
	return b.Slice(x, start, limit, strides)
}

// qrPairSplit splits dim d of x (even length) into its even and odd positions.
func qrPairSplit(b *hlo.Builder, x *hlo.Value, d int) (*hlo.Value, *hlo.Value) {
	s := x.T.Shape
	half := append(append(append([]int64{}, s[:d]...), s[d]/2, 2), s[d+1:]...)
	out := append(append(append([]int64{}, s[:d]...), s[d]/2), s[d+1:]...)
	y := b.Reshape(x, half...)
	return b.Reshape(qrSliceDim(b, y, d+1, 0, 1), out...), b.Reshape(qrSliceDim(b, y, d+1, 1, 2), out...)
}

// qrPairJoin is the inverse of qrPairSplit.
func qrPairJoin(b *hlo.Builder, even, odd *hlo.Value, d int) *hlo.Value {
	s := even.T.Shape
	one := append(append(append([]int64{}, s[:d]...), s[d], 1), s[d+1:]...)
	y := b.Concatenate(d+1, b.Reshape(even, one...), b.Reshape(odd, one...))
	full := append(append(append([]int64{}, s[:d]...), 2*s[d]), s[d+1:]...)
	return b.Reshape(y, full...)
}

// qrRoundRobin moves the indices along dim d to the next round: with pairs
// (t_i, b_i), t_0 stays and the others move one step around the circle
// t_1 .. t_{k-1}, b_{k-1} .. b_0.
func qrRoundRobin(b *hlo.Builder, x *hlo.Value, d int) *hlo.Value {
	k := x.T.Shape[d] / 2
	if k < 2 {
		return x
	}
	t, bt := qrPairSplit(b, x, d)
	tp := []*hlo.Value{qrSliceDim(b, t, d, 0, 1), qrSliceDim(b, bt, d, 0, 1)}
	if k > 2 {
		tp = append(tp, qrSliceDim(b, t, d, 1, k-1))
	}
	nt := b.Concatenate(d, tp...)
	nb := b.Concatenate(d, qrSliceDim(b, bt, d, 1, k), qrSliceDim(b, t, d, k-1, k))
	return qrPairJoin(b, nt, nb, d)
}

// qrRotatePairs rotates the pairs along dim d of x by (c, s) of [B, n/2]:
// even' = c even - s odd, odd' = s even + c odd.
func qrRotatePairs(b *hlo.Builder, x, c, s *hlo.Value, d int) *hlo.Value {
	e, o := qrPairSplit(b, x, d)
	cb := b.BroadcastInDim(c, e.T.Shape, []int64{0, int64(d)})
	sb := b.BroadcastInDim(s, e.T.Shape, []int64{0, int64(d)})
	return qrPairJoin(b, b.Sub(b.Mul(cb, e), b.Mul(sb, o)), b.Add(b.Mul(sb, e), b.Mul(cb, o)), d)
}

// qrPadOdd pads a [B, r, n] with one zero column when n is odd (and with a
// zero row as well when square), and says whether it did. The padded index
// never couples to the others, so its rotations are the identity.
func qrPadOdd(b *hlo.Builder, a *hlo.Value, square bool) (*hlo.Value, bool) {
	n := a.T.Shape[2]
	if n%2 == 0 {
		return a, false
	}
	z := b.Scalar(a.T.Elem, 0)
	hi := []int64{0, 0, 1}
	if square {
		hi[1] = 1
	}
	return b.Pad(a, z, []int64{0, 0, 0}, hi, []int64{0, 0, 0}), true
}

// qrPadKey replaces the sort keys of the padded index (found by its
// eigenvector column, e_pad) by fill, so it sorts last and can be dropped.
func qrPadKey(b *hlo.Builder, key, v *hlo.Value, fill float64) *hlo.Value {
	np := v.T.Shape[1]
	row := b.Reshape(qrSliceDim(b, v, 1, np-1, np), v.T.Shape[0], v.T.Shape[2])
	isPad := b.Compare(hlo.NE, row, qrFill(b, row.T.Elem, row.T.Shape, 0))
	return b.Select(isPad, qrFill(b, key.T.Elem, key.T.Shape, fill), key)
}

// qrJacobiRounds runs sweeps of n-1 rounds (n even) while more holds.
func qrJacobiRounds(b *hlo.Builder, n int64, init []*hlo.Value,
	more func(rb *hlo.Builder, c []*hlo.Value) *hlo.Value,
	round func(rb *hlo.Builder, c []*hlo.Value) []*hlo.Value) []*hlo.Value {
	carried := append([]*hlo.Value{b.ConstantInt(hlo.T(hlo.S64), 0)}, init...)
	outs := b.While(carried, func(rb *hlo.Builder, c []*hlo.Value) *hlo.Value {
		lim := rb.Compare(hlo.LT, c[0], rb.ConstantInt(hlo.T(hlo.S64), qrJacobiSweeps))
		return rb.And(lim, more(rb, c[1:]))
	}, func(rb *hlo.Builder, c []*hlo.Value) []*hlo.Value {
		outs := rb.For(n-1, c[1:], func(rb *hlo.Builder, _ *hlo.Value, c []*hlo.Value) []*hlo.Value {
			return round(rb, c)
		})
		return append([]*hlo.Value{rb.Add(c[0], rb.ConstantInt(hlo.T(hlo.S64), 1))}, outs...)
	})
	return outs[1:]
}
