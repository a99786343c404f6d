package dispatch

import "torchtpu/hlo"

// linalgCross is linalg_cross(self, other, *, dim): the cross product of
// 3-vectors along dim, with broadcasting.
func linalgCross(c *Ctx) ([]*hlo.Value, error) {
	m, om := c.Meta(0), c.Meta(1)
	if m.Rank() != om.Rank() {
		return nil, Errorf("linalg.cross: inputs must have the same number of dimensions.")
	}
	if m.DType != om.DType {
		return nil, Errorf("linalg.cross: expected input and other to have the same dtype, but got %s and %s", m.DType, om.DType)
	}
	shape, err := BroadcastShapes(m.Sizes, om.Sizes)
	if err != nil {
		return nil, err
	}
	dim, err := wrapDim(c.Int(2, -1), len(shape))
	if err != nil {
		return nil, err
	}
	if m.Sizes[dim] != 3 || om.Sizes[dim] != 3 {
		return nil, Errorf("linalg.cross: inputs dimension %d must have length 3. Got %d and %d", dim, m.Sizes[dim], om.Sizes[dim])
	}
	b := c.B
	x, y := b.BroadcastTo(c.T(0), shape), b.BroadcastTo(c.T(1), shape)
	part := func(v *hlo.Value, k int64) *hlo.Value {
		start, limit, strides := make([]int64, len(shape)), append([]int64{}, shape...), make([]int64, len(shape))
		for i := range strides {
			strides[i] = 1
		}
		start[dim], limit[dim] = k, k+1
		return b.Slice(v, start, limit, strides)
	}
	comp := func(i, j int64) *hlo.Value {
		return b.Sub(b.Mul(part(x, i), part(y, j)), b.Mul(part(x, j), part(y, i)))
	}
	return []*hlo.Value{b.Concatenate(int(dim), comp(1, 2), comp(2, 0), comp(0, 1))}, nil
}

// flatIndex reads index argument i (int64), checks it against n elements,
// and returns it with negative entries wrapped, in the graph.
func (c *Ctx) flatIndex(op string, i int, n int64) (*hlo.Value, error) {
	im := c.Meta(i)
	if im.DType != Int64 {
		return nil, Errorf("%s(): Expected a long tensor for index, but got %s", op, scalarTypeName(im.DType))
	}
	var vs []int64
	var err error
	if !c.NoHostChecks {
		vs, err = c.R.Int64s(c.Args[i].Handles[0])
	}
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		if v < -n || v >= n {
			return nil, IndexErrorf("out of range: tried to access index %d on a tensor of %d elements.", v, n)
		}
	}
	b := c.B
	idx := b.Reshape(c.T(i), im.Numel())
	zero := full(b, Int64, []int64{im.Numel()}, 0)
	wrapped := b.Add(idx, full(b, Int64, []int64{im.Numel()}, float64(n)))
	return b.Select(b.Compare(hlo.LT, idx, zero), wrapped, idx), nil
}

// takeRule is take(self, index): self read as a flat array at index.
func takeRule(c *Ctx) ([]*hlo.Value, error) {
	m, im := c.Meta(0), c.Meta(1)
	if im.Numel() > 0 && m.Numel() == 0 {
		return nil, Errorf("take(): tried to take from an empty tensor")
	}
	idx, err := c.flatIndex("take", 1, m.Numel())
	if err != nil {
		return nil, err
	}
	if im.Numel() == 0 {
		return []*hlo.Value{full(c.B, m.DType, im.Sizes, 0)}, nil
	}
	b := c.B
	g := b.GatherFlat(b.Reshape(c.T(0), m.Numel()), idx)
	return []*hlo.Value{b.Reshape(g, im.Sizes...)}, nil
}

// putRule is put(self, index, source, accumulate): source written (or added)
// into self read as a flat array at index.
func putRule(c *Ctx) ([]*hlo.Value, error) {
	m, im, sm := c.Meta(0), c.Meta(1), c.Meta(2)
	if sm.DType != m.DType {
		return nil, Errorf("put_(): self and source expected to have the same dtype, but got self.dtype = %s and source.dtype = %s", m.DType, sm.DType)
	}
	if sm.Numel() != im.Numel() {
		return nil, Errorf("put_(): Expected source and index to have the same number of elements, but got source.numel() = %d, index.numel() = %d",
			sm.Numel(), im.Numel())
	}
	if im.Numel() > 0 && m.Numel() == 0 {
		return nil, Errorf("put_(): Tried to put elements into an empty tensor")
	}
	idx, err := c.flatIndex("put_", 1, m.Numel())
	if err != nil {
		return nil, err
	}
	if im.Numel() == 0 {
		return []*hlo.Value{c.T(0)}, nil
	}
	b := c.B
	var combine combineFn
	if c.Bool(3, false) {
		combine = addCombine
	}
	r := b.ScatterFlat(b.Reshape(c.T(0), m.Numel()), idx, b.Reshape(c.T(2), sm.Numel()), combine)
	return []*hlo.Value{b.Reshape(r, m.Sizes...)}, nil
}

// traceRule is trace(self): the sum of a matrix's main diagonal (int64 for
// integer inputs).
func traceRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if m.Rank() != 2 {
		return nil, Errorf("trace: expected a matrix, but got tensor with dim %d", m.Rank())
	}
	d := m.DType
	if d.IsIntegral(true) {
		d = Int64
	}
	b := c.B
	it := hlo.T(hlo.S64, m.Sizes...)
	diag := b.Compare(hlo.EQ, b.Iota(it, 0), b.Iota(it, 1))
	x := convertTo(b, c.T(0), m.DType, d)
	x = b.Select(diag, x, full(b, d, m.Sizes, 0))
	return []*hlo.Value{sumProd(b, x, d, []int64{0, 1}, false)}, nil
}

// unfoldBackward is unfold_backward(grad_in, input_sizes, dim, size, step):
// window element j of window i adds into input position i*step + j.
func unfoldBackward(c *Ctx) ([]*hlo.Value, error) {
	gm := c.Meta(0)
	sizes := c.Ints(1, nil)
	b := c.B
	if len(sizes) == 0 {
		return []*hlo.Value{b.Reshape(c.T(0))}, nil
	}
	dim, err := wrapDim(c.Int(2, 0), len(sizes))
	if err != nil {
		return nil, err
	}
	size, step := c.Int(3, 1), c.Int(4, 1)
	r := len(sizes)
	if gm.Rank() != r+1 || gm.Sizes[r] != size {
		return nil, Errorf("unfold_backward: grad_in shape %s does not match input sizes %s", shapeString(gm.Sizes), shapeString(sizes))
	}
	if gm.Numel() == 0 {
		return []*hlo.Value{full(b, gm.DType, sizes, 0)}, nil
	}
	nw := gm.Sizes[dim]
	it := hlo.T(hlo.S64, nw, size, 1)
	pos := b.Add(b.Mul(b.Iota(it, 0), b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), step), it.Shape)), b.Iota(it, 1))
	return []*hlo.Value{b.Scatter(full(b, gm.DType, sizes, 0), pos, c.T(0), offsetDimsAround(r, dim), []int64{dim}, []int64{dim}, 2, addCombine)}, nil
}

// maskedScatter is masked_scatter(self, mask, source): the positions where
// the mask holds take source's elements in order; the mask is read on the
// host.
func maskedScatter(c *Ctx) ([]*hlo.Value, error) {
	m, mm, sm := c.Meta(0), c.Meta(1), c.Meta(2)
	if mm.DType != Bool {
		return nil, Errorf("masked_scatter_ only supports boolean masks, but got mask with dtype %s", cppName(mm.DType))
	}
	if sm.DType != m.DType {
		return nil, Errorf("masked_scatter: expected self and source to have same dtypes but got %s and %s", scalarTypeName(m.DType), scalarTypeName(sm.DType))
	}
	shape, err := BroadcastShapes(m.Sizes, mm.Sizes)
	if err != nil {
		return nil, err
	}
	mask, err := c.R.Int64s(c.Args[1].Handles[0])
	if err != nil {
		return nil, err
	}
	pos := maskPositions(mask, mm.Sizes, shape)
	k := int64(len(pos))
	if k > sm.Numel() {
		return nil, Errorf("masked_scatter: expected source to have at least %d elements, got %d", k, sm.Numel())
	}
	b := c.B
	x := b.BroadcastTo(c.T(0), shape)
	if k == 0 {
		return []*hlo.Value{x}, nil
	}
	upd := b.Slice(b.Reshape(c.T(2), sm.Numel()), []int64{0}, []int64{k}, []int64{1})
	r := b.ScatterFlat(b.Reshape(x, numel(shape)), c.R.Int64Tensor(pos, []int64{k}), upd, nil)
	return []*hlo.Value{b.Reshape(r, shape...)}, nil
}

// unique1 is _unique(self, sorted, return_inverse): _unique2 without counts.
func unique1(c *Ctx) ([]*hlo.Value, error) {
	out, err := unique2(c)
	if err != nil {
		return nil, err
	}
	return out[:2], nil
}

func init() {
	def("aten::_unique", unique1).DataDependent = true
	def("aten::linalg_cross", linalgCross)
	def("aten::take", takeRule)
	def("aten::put", putRule)
	def("aten::trace", traceRule)
	def("aten::unfold_backward", unfoldBackward)
	def("aten::masked_scatter", maskedScatter)
}
