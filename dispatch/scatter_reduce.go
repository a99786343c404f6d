package dispatch

import "torchtpu/hlo"

// combineFn merges an old element with an update inside a scatter body.
type combineFn func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value

// scatterFn scatters upd into base at fixed indices, merging with combine
// (nil replaces).
type scatterFn func(base, upd *hlo.Value, combine combineFn) *hlo.Value

// reduceCombine returns the scatter body and the identity of reduce
// ("sum", "prod", "mean", "amax", "amin"; scatter's "add" and "multiply").
func reduceCombine(reduce string, e hlo.Elem) (combineFn, float64, error) {
	switch reduce {
	case "sum", "add", "mean":
		return addCombine, 0, nil
	case "prod", "multiply":
		return func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value {
			if old.T.Elem == hlo.Pred {
				return rb.And(old, new)
			}
			return rb.Mul(old, new)
		}, 1, nil
	case "amax":
		return func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value { return rb.Max(old, new) }, hlo.Lowest(e), nil
	case "amin":
		return func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value { return rb.Min(old, new) }, hlo.Highest(e), nil
	}
	return nil, 0, Errorf("reduce argument must be either sum, prod, mean, amax or amin, got %s", reduce)
}

// reduceInto scatters upd into x with reduce. Without includeSelf the
// elements of x that receive an update start from the reduction's identity
// instead of their own value; mean divides by the number of contributions
// (floor division for integers), leaving untouched elements as they were.
func reduceInto(b *hlo.Builder, x, upd *hlo.Value, d DType, reduce string, includeSelf bool, sc scatterFn) (*hlo.Value, error) {
	combine, ident, err := reduceCombine(reduce, x.T.Elem)
	if err != nil {
		return nil, err
	}
	shape := x.T.Shape
	base := x
	if !includeSelf {
		touched := sc(full(b, Bool, shape, 0), full(b, Bool, upd.T.Shape, 1), nil)
		base = b.Select(touched, full(b, d, shape, ident), x)
	}
	r := sc(base, upd, combine)
	if reduce != "mean" {
		return r, nil
	}
	start := 0.0
	if includeSelf {
		start = 1
	}
	count := sc(full(b, d, shape, start), full(b, d, upd.T.Shape, 1), addCombine)
	zero := full(b, d, shape, 0)
	count = b.Select(b.Compare(hlo.EQ, count, zero), full(b, d, shape, 1), count)
	if d.IsFloat() || d.IsComplex() {
		return b.Div(r, count), nil
	}
	return floorDiv(b, r, count, d), nil
}

// elementScatter is the scatter of scatter/scatter_reduce: update element
// idx-position p goes to x at p with coordinate dim replaced by idx[p].
func elementScatter(b *hlo.Builder, idx *hlo.Value, dim int64, rank int) scatterFn {
	if rank == 0 {
		flat := b.Reshape(b.Convert(idx, hlo.S64), 1)
		return func(base, upd *hlo.Value, combine combineFn) *hlo.Value {
			r := b.ScatterFlat(b.Reshape(base, 1), flat, b.Reshape(upd, 1), combine)
			return b.Reshape(r)
		}
	}
	ind := fullIndices(b, idx, dim)
	r := int64(rank)
	return func(base, upd *hlo.Value, combine combineFn) *hlo.Value {
		return b.Scatter(base, ind, upd, nil, iotaDims(rank), iotaDims(rank), r, combine)
	}
}

// dimScatter is the scatter of index_add/index_copy/index_reduce: slice i
// of the update along dim goes to slice idx[i] of x.
func dimScatter(b *hlo.Builder, idx *hlo.Value, dim int64, rank int) scatterFn {
	n := idx.T.NumElements()
	ind := b.Reshape(b.Convert(idx, hlo.S64), n, 1)
	if rank == 0 {
		return func(base, upd *hlo.Value, combine combineFn) *hlo.Value {
			r := b.ScatterFlat(b.Reshape(base, 1), b.Reshape(ind, n), b.Reshape(upd, n), combine)
			return b.Reshape(r)
		}
	}
	return func(base, upd *hlo.Value, combine combineFn) *hlo.Value {
		if upd.T.Rank() == 0 { // a 0-dim source into a vector: one slice
			upd = b.Reshape(upd, 1)
		}
		return b.Scatter(base, ind, upd, offsetDimsAround(rank, dim), []int64{dim}, []int64{dim}, 1, combine)
	}
}

// scatterSource checks scatter's arguments (self, dim, index, src|value at
// srcArg) and returns the wrapped dim and the updates, shaped like index
// (none for an empty index).
func (c *Ctx) scatterSource(op string, srcArg int) (int64, *hlo.Value, error) {
	m, im := c.Meta(0), c.Meta(2)
	dim, err := wrapDim(c.Int(1, 0), m.Rank())
	if err != nil {
		return 0, nil, err
	}
	var src *TensorMeta
	if c.IsTensor(srcArg) {
		s := c.Meta(srcArg)
		src = &s
		if s.DType != m.DType {
			return 0, nil, Errorf("%s(): Expected self.dtype to be equal to src.dtype", op)
		}
	}
	if err := checkGatherIndex(op, m, im, dim, src); err != nil {
		return 0, nil, err
	}
	if err := c.checkDimIndex(2, m, dim); err != nil {
		return 0, nil, err
	}
	b := c.B
	if im.Numel() == 0 {
		return dim, nil, nil // nothing to scatter
	}
	if src == nil {
		return dim, b.BroadcastTo(c.Value(srcArg, m.DType), im.Sizes), nil
	}
	upd := c.T(srcArg)
	if src.Rank() == 0 {
		return dim, b.Reshape(upd, im.Sizes...), nil
	}
	zeros := make([]int64, src.Rank())
	ones := make([]int64, src.Rank())
	for k := range ones {
		ones[k] = 1
	}
	return dim, b.Slice(upd, zeros, im.Sizes, ones), nil
}

// scatterReduceRule builds scatter_reduce.two(self, dim, index, src, reduce,
// *, include_self) and scatter.reduce / scatter.value_reduce(self, dim,
// index, src|value, *, reduce).
func scatterReduceRule(op string, legacy bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m, im := c.Meta(0), c.Meta(2)
		reduce := c.Str(4, "")
		if legacy && reduce != "add" && reduce != "multiply" {
			return nil, Errorf("reduce argument must be either add or multiply.")
		}
		dim, upd, err := c.scatterSource(op, 3)
		if err != nil {
			return nil, err
		}
		if im.Numel() == 0 {
			return []*hlo.Value{c.T(0)}, nil
		}
		includeSelf := legacy || c.Bool(5, true)
		r, err := reduceInto(c.B, c.T(0), upd, m.DType, reduce, includeSelf, elementScatter(c.B, c.T(2), dim, m.Rank()))
		if err != nil {
			return nil, err
		}
		return []*hlo.Value{r}, nil
	}
}

// indexArgsError is CPU's error for index v out of [0, size) in dimension dim
// of a rank-rank self: index_copy_ names it; index_add along the outer or
// inner dimension of a matrix or more goes through CPU's scatter-add, whose
// message is a RuntimeError; index_add elsewhere and index_reduce say
// "index out of range in self".
func indexArgsError(op string, v, dim, size int64, rank int) error {
	switch {
	case op == "index_copy":
		return IndexErrorf("index_copy_(): index %d is out of bounds for dimension %d with size %d", v, dim, size)
	case op == "index_add" && rank > 1 && (dim == 0 || dim == int64(rank-1)):
		return Errorf("index %d is out of bounds for dimension %d with size %d", v, dim, size)
	}
	return IndexErrorf("index out of range in self")
}

// indexArgs checks index_add/index_copy/index_reduce's arguments (self, dim,
// index, source) and returns the wrapped dim.
func (c *Ctx) indexArgs(op string) (int64, error) {
	m, im, sm := c.Meta(0), c.Meta(2), c.Meta(3)
	dim, err := wrapDim(c.Int(1, 0), m.Rank())
	if err != nil {
		return 0, err
	}
	if im.DType != Int64 && im.DType != Int32 {
		return 0, Errorf("%s(): Expected dtype int32/int64 for index", op)
	}
	if im.Rank() > 1 {
		return 0, Errorf("%s(): Index is supposed to be a vector", op)
	}
	if sm.DType != m.DType {
		return 0, Errorf("%s(): self (%s) and source (%s) must have the same scalar type", op, scalarTypeName(m.DType), scalarTypeName(sm.DType))
	}
	srank := max(sm.Rank(), 1)
	if srank != max(m.Rank(), 1) {
		return 0, Errorf("%s(): Source/destination tensor must have same slice shapes. Destination slice shape: %s at dimension %d and source slice shape: %s at dimension 0.",
			op, shapeString(m.Sizes), dim, shapeString(sm.Sizes))
	}
	ssize := int64(1)
	if sm.Rank() > 0 {
		ssize = sm.Sizes[dim]
	}
	if ssize != im.Numel() {
		return 0, Errorf("%s(): Number of indices (%d) should be equal to source.size(dim) (%d)", op, im.Numel(), ssize)
	}
	for k := 0; k < m.Rank() && k < sm.Rank(); k++ {
		if int64(k) != dim && m.Sizes[k] != sm.Sizes[k] {
			return 0, Errorf("%s(): Source/destination tensor must have same slice shapes. Destination slice shape: %s at dimension %d and source slice shape: %s at dimension 0.",
				op, shapeString(m.Sizes), dim, shapeString(sm.Sizes))
		}
	}
	size := int64(1)
	if m.Rank() > 0 {
		size = m.Sizes[dim]
	}
	if err := c.checkIndices(2, size, func(v int64) error {
		return indexArgsError(op, v, dim, size, m.Rank())
	}); err != nil {
		return 0, err
	}
	return dim, nil
}

// indexAdd is index_add(self, dim, index, source, *, alpha).
func indexAdd(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	dim, err := c.indexArgs("index_add")
	if err != nil {
		return nil, err
	}
	if c.Meta(2).Numel() == 0 {
		return []*hlo.Value{c.T(0)}, nil
	}
	src := c.T(3)
	if c.Has(4) && c.Float(4, 1) != 1 {
		src = c.B.Mul(src, c.B.BroadcastTo(c.Value(4, m.DType), c.Meta(3).Sizes))
	}
	sc := dimScatter(c.B, c.T(2), dim, m.Rank())
	return []*hlo.Value{sc(c.T(0), src, addCombine)}, nil
}

// indexCopy is index_copy(self, dim, index, source).
func indexCopy(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	dim, err := c.indexArgs("index_copy")
	if err != nil {
		return nil, err
	}
	if c.Meta(2).Numel() == 0 {
		return []*hlo.Value{c.T(0)}, nil
	}
	sc := dimScatter(c.B, c.T(2), dim, m.Rank())
	return []*hlo.Value{sc(c.T(0), c.T(3), nil)}, nil
}

// indexReduce is index_reduce(self, dim, index, source, reduce, *, include_self).
func indexReduce(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	reduce := c.Str(4, "")
	switch reduce {
	case "prod", "mean", "amax", "amin":
	default:
		return nil, Errorf("index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got %s.", reduce)
	}
	dim, err := c.indexArgs("index_reduce")
	if err != nil {
		return nil, err
	}
	if c.Meta(2).Numel() == 0 {
		return []*hlo.Value{c.T(0)}, nil
	}
	r, err := reduceInto(c.B, c.T(0), c.T(3), m.DType, reduce, c.Bool(5, true), dimScatter(c.B, c.T(2), dim, m.Rank()))
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{r}, nil
}

// indexFill is index_fill.int_Scalar / int_Tensor(self, dim, index, value).
func indexFill(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	dim, err := wrapDim(c.Int(1, 0), m.Rank())
	if err != nil {
		return nil, err
	}
	size := int64(1)
	if m.Rank() > 0 {
		size = m.Sizes[dim]
	}
	idx, err := c.R.Int64s(c.Args[2].Handles[0])
	if err != nil {
		return nil, err
	}
	hit := make([]int64, size)
	for _, v := range idx {
		if v < -size || v >= size {
			return nil, IndexErrorf("index %d is out of bounds for dimension %d with size %d", v, dim, size)
		}
		if v < 0 {
			v += size
		}
		hit[v] = 1
	}
	b := c.B
	mask := c.upload(nil, hit, Bool, []int64{size})
	if m.Rank() > 0 {
		mask = b.BroadcastInDim(mask, m.Sizes, []int64{dim})
	} else {
		mask = b.Reshape(mask)
	}
	x := c.T(0)
	v := b.BroadcastTo(c.Value(3, m.DType), m.Sizes)
	return []*hlo.Value{b.Select(mask, v, x)}, nil
}

func init() {
	def("aten::scatter_reduce.two", scatterReduceRule("scatter_reduce", false), "aten::scatter_reduce.two_out").Needs = hostArgs(2)
	def("aten::scatter.reduce", scatterReduceRule("scatter", true), "aten::scatter.reduce_out").Needs = hostArgs(2)
	def("aten::scatter.value_reduce", scatterReduceRule("scatter", true), "aten::scatter.value_reduce_out").Needs = hostArgs(2)
	def("aten::index_add", indexAdd).Needs = hostArgs(2)
	def("aten::index_copy", indexCopy).Needs = hostArgs(2)
	def("aten::index_reduce", indexReduce).Needs = hostArgs(2)
	def("aten::index_fill.int_Scalar", indexFill, "aten::index_fill.int_Scalar_out").Needs = Needs{HostArgs: []int{2}, Uploads: true}
	def("aten::index_fill.int_Tensor", indexFill, "aten::index_fill.int_Tensor_out").Needs = Needs{HostArgs: []int{2}, Uploads: true}
}
