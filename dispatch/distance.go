package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// expandBatch broadcasts x [..., S, M] to the batch shape bs, keeping its two
// trailing dimensions.
func expandBatch(b *hlo.Builder, x *hlo.Value, bs []int64) *hlo.Value {
	r := x.T.Rank()
	shape := append(append([]int64{}, bs...), x.T.Shape[r-2:]...)
	dims := make([]int64, r)
	for i := range dims {
		dims[i] = int64(len(shape) - r + i)
	}
	return b.BroadcastInDim(x, shape, dims)
}

// pairDiff is x1[..., P, 1, M] - x2[..., 1, R, M] for x1 [..., P, M] and x2
// [..., R, M] of the same batch shape.
func pairDiff(b *hlo.Builder, x1, x2 *hlo.Value) *hlo.Value {
	r := x1.T.Rank()
	p, rr, m := x1.T.Shape[r-2], x2.T.Shape[r-2], x1.T.Shape[r-1]
	shape := append(append([]int64{}, x1.T.Shape[:r-2]...), p, rr, m)
	d1, d2 := make([]int64, r), make([]int64, r)
	for i := 0; i < r-2; i++ {
		d1[i], d2[i] = int64(i), int64(i)
	}
	d1[r-2], d1[r-1] = int64(r-2), int64(r)
	d2[r-2], d2[r-1] = int64(r-1), int64(r)
	return b.Sub(b.BroadcastInDim(x1, shape, d1), b.BroadcastInDim(x2, shape, d2))
}

// distNorm is the p-norm of d over its last dimension.
func distNorm(b *hlo.Builder, d *hlo.Value, p float64) *hlo.Value {
	e := d.T.Elem
	last := int64(d.T.Rank() - 1)
	a := b.Abs(d)
	zero := b.Scalar(e, 0)
	switch {
	case p == 0:
		nz := b.Convert(b.Compare(hlo.NE, a, b.BroadcastTo(zero, a.T.Shape)), e)
		return b.Reduce(nz, zero, hlo.ReduceSum, last)
	case math.IsInf(p, 1):
		return b.Reduce(a, zero, hlo.ReduceMax, last)
	case p == 1:
		return b.Reduce(a, zero, hlo.ReduceSum, last)
	case p == 2:
		return b.Sqrt(b.Reduce(b.Mul(a, a), zero, hlo.ReduceSum, last))
	}
	s := b.Reduce(b.Pow(a, b.BroadcastTo(b.Scalar(e, p), a.T.Shape)), zero, hlo.ReduceSum, last)
	return b.Pow(s, b.BroadcastTo(b.Scalar(e, 1/p), s.T.Shape))
}

// distNormGrad is the derivative of the p-norm dist [..., P, R] of the
// differences d [..., P, R, M] with respect to d, as PyTorch defines it
// (zero where dist is zero).
func distNormGrad(b *hlo.Builder, d, dist *hlo.Value, p float64) *hlo.Value {
	e := d.T.Elem
	s := d.T.Shape
	r := d.T.Rank()
	bd := make([]int64, r-1)
	for i := range bd {
		bd[i] = int64(i)
	}
	dd := b.BroadcastInDim(dist, s, bd)
	zeros := b.BroadcastTo(b.Scalar(e, 0), s)
	sc := func(v float64) *hlo.Value { return b.BroadcastTo(b.Scalar(e, v), s) }
	var g *hlo.Value
	switch {
	case p == 0:
		return zeros
	case math.IsInf(p, 1):
		g = b.Mul(b.Sign(d), b.Convert(b.Compare(hlo.EQ, b.Abs(d), dd), e))
	case p == 1:
		g = b.Sign(d)
	case p == 2:
		g = b.Div(d, dd)
	default:
		g = b.Div(b.Mul(b.Sign(d), b.Pow(b.Abs(d), sc(p-1))), b.Pow(dd, sc(p-1)))
		if p < 1 {
			g = b.Select(b.Compare(hlo.EQ, d, zeros), zeros, g)
		}
	}
	return b.Select(b.Compare(hlo.EQ, dd, zeros), zeros, g)
}

// distGrad is the gradient of x1 for dist = cdist(x1, x2, p) given grad
// [..., P, R]: the sum over R of grad times the norm's derivative.
func distGrad(b *hlo.Builder, g, x1, x2, dist *hlo.Value, p float64) *hlo.Value {
	d := pairDiff(b, x1, x2)
	dn := distNormGrad(b, d, dist, p)
	r := d.T.Rank()
	bd := make([]int64, r-1)
	for i := range bd {
		bd[i] = int64(i)
	}
	t := b.Mul(dn, b.BroadcastInDim(g, d.T.Shape, bd))
	return b.Reduce(t, b.Scalar(d.T.Elem, 0), hlo.ReduceSum, int64(r-2))
}

func checkDist(x1, x2 TensorMeta, p float64) error {
	if p < 0 {
		return Errorf("cdist only supports non-negative p values")
	}
	if x1.Rank() < 2 || x2.Rank() < 2 {
		return Errorf("cdist only supports at least 2D tensors, X1 got: %dD", x1.Rank())
	}
	if x1.Sizes[x1.Rank()-1] != x2.Sizes[x2.Rank()-1] {
		return Errorf("X1 and X2 must have the same number of columns. X1: %d X2: %d",
			x1.Sizes[x1.Rank()-1], x2.Sizes[x2.Rank()-1])
	}
	if !x1.DType.IsFloat() || x1.DType != x2.DType {
		return Errorf("cdist only supports floating-point dtypes, X1 got: %s", scalarTypeName(x1.DType))
	}
	return nil
}

// cdistPair broadcasts the batch dimensions of args i and i+1.
func (c *Ctx) cdistPair(i int) (*hlo.Value, *hlo.Value, error) {
	x1, x2 := c.Meta(i), c.Meta(i+1)
	bs, err := BroadcastShapes(x1.Sizes[:x1.Rank()-2], x2.Sizes[:x2.Rank()-2])
	if err != nil {
		return nil, nil, err
	}
	return expandBatch(c.B, c.T(i), bs), expandBatch(c.B, c.T(i+1), bs), nil
}

// cdistForward is aten::_cdist_forward(x1, x2, p, compute_mode).
func cdistForward(c *Ctx) ([]*hlo.Value, error) {
	p := c.Float(2, 2)
	if err := checkDist(c.Meta(0), c.Meta(1), p); err != nil {
		return nil, err
	}
	x1, x2, err := c.cdistPair(0)
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{distNorm(c.B, pairDiff(c.B, x1, x2), p)}, nil
}

// cdistBackward is aten::_cdist_backward(grad, x1, x2, p, cdist): the
// gradient of x1.
func cdistBackward(c *Ctx) ([]*hlo.Value, error) {
	p := c.Float(3, 2)
	x1m := c.Meta(1)
	if err := checkDist(x1m, c.Meta(2), p); err != nil {
		return nil, err
	}
	x1, x2, err := c.cdistPair(1)
	if err != nil {
		return nil, err
	}
	b := c.B
	g := distGrad(b, c.T(0), x1, x2, c.T(4), p)
	// Sum over batch dimensions x1 was broadcast along.
	lead := g.T.Rank() - x1m.Rank()
	var dims []int64
	for i := 0; i < g.T.Rank()-2; i++ {
		if i < lead || x1m.Sizes[i-lead] == 1 && g.T.Shape[i] != 1 {
			dims = append(dims, int64(i))
		}
	}
	if len(dims) > 0 {
		g = b.Reshape(b.Reduce(g, b.Scalar(g.T.Elem, 0), hlo.ReduceSum, dims...), x1m.Sizes...)
	}
	return []*hlo.Value{g}, nil
}

// pairIndex is, for an [N, N] grid, whether i < j and the position of the
// pair (i, j) in pdist's row-major upper-triangle order (k for i >= j).
func pairIndex(b *hlo.Builder, n, k int64) (*hlo.Value, *hlo.Value) {
	s := []int64{n, n}
	i, j := b.Iota(hlo.T(hlo.S64, s...), 0), b.Iota(hlo.T(hlo.S64, s...), 1)
	c := func(v int64) *hlo.Value { return b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), v), s) }
	// i*n - i*(i+1)/2 + j - i - 1
	tri := b.Div(b.Mul(i, b.Add(i, c(1))), c(2))
	idx := b.Sub(b.Sub(b.Add(b.Sub(b.Mul(i, c(n)), tri), j), i), c(1))
	upper := b.Compare(hlo.LT, i, j)
	return upper, b.Select(upper, idx, c(k))
}

func checkPdist(x TensorMeta, p float64) error {
	if x.Rank() != 2 {
		return Errorf("pdist only supports 2D tensors, got: %dD", x.Rank())
	}
	if !x.DType.IsFloat() {
		return Errorf("pdist only supports floating-point dtypes")
	}
	if p < 0 {
		return Errorf("pdist only supports non-negative p values")
	}
	return nil
}

// pdistForward is aten::_pdist_forward(self, p): the distances between rows
// i < j, in row-major order.
func pdistForward(c *Ctx) ([]*hlo.Value, error) {
	x, p := c.Meta(0), c.Float(1, 2)
	if err := checkPdist(x, p); err != nil {
		return nil, err
	}
	b := c.B
	n := x.Sizes[0]
	k := n * (n - 1) / 2
	if k == 0 {
		return []*hlo.Value{full(b, x.DType, []int64{0}, 0)}, nil
	}
	d := distNorm(b, pairDiff(b, c.T(0), c.T(0)), p)
	_, idx := pairIndex(b, n, k)
	out := full(b, x.DType, []int64{k + 1}, 0)
	out = b.ScatterFlat(out, b.Reshape(idx, n*n), b.Reshape(d, n*n), func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value { return new })
	return []*hlo.Value{b.Slice(out, []int64{0}, []int64{k}, []int64{1})}, nil
}

// pdistBackward is aten::_pdist_backward(grad, self, p, pdist).
func pdistBackward(c *Ctx) ([]*hlo.Value, error) {
	x, p := c.Meta(1), c.Float(2, 2)
	if err := checkPdist(x, p); err != nil {
		return nil, err
	}
	b := c.B
	n := x.Sizes[0]
	k := n * (n - 1) / 2
	if k == 0 {
		return []*hlo.Value{full(b, x.DType, x.Sizes, 0)}, nil
	}
	e := x.DType.Elem()
	upper, idx := pairIndex(b, n, k)
	zero := b.Scalar(e, 0)
	gext := b.Concatenate(0, c.T(0), b.Reshape(zero, 1))
	dext := b.Concatenate(0, c.T(3), b.Reshape(zero, 1))
	zs := b.BroadcastTo(zero, []int64{n, n})
	g := b.Select(upper, b.GatherFlat(gext, idx), zs)
	dist := b.GatherFlat(dext, idx)
	g = b.Add(g, b.Transpose(g, 1, 0))
	dist = b.Add(dist, b.Transpose(dist, 1, 0))
	return []*hlo.Value{distGrad(b, g, c.T(1), c.T(1), dist, p)}, nil
}

func init() {
	def("aten::_cdist_forward", cdistForward)
	def("aten::_cdist_backward", cdistBackward)
	def("aten::_pdist_forward", pdistForward)
	def("aten::_pdist_backward", pdistBackward)
}
