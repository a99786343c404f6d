package dispatch

import (
	"fmt"
	"slices"
	"strings"

	"torchtpu/hlo"
)

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

// indexCopyChecks is index_copy_'s meta checks, in CPU's order and words (0-dim self and source count as 1-D).
func indexCopyChecks(m, im, sm TensorMeta, dim int64) error {
	r, sr := max(m.Rank(), 1), max(sm.Rank(), 1)
	n := im.Numel()
	switch {
	case im.Rank() >= 2:
		return IndexErrorf("index_copy_(): Index should have dimension 1 or 0 (got %d)", im.Rank())
	case sm.Rank() == 0 && n != 1:
		return IndexErrorf("index_copy_(): When source is scalar, index should have one element (got %d)", n)
	case sm.Rank() != m.Rank() && sm.Rank() != 0 && m.Rank() != 0:
		return IndexErrorf("index_copy_(): When source and destination are not scalars, their dimensionality must match. Source dimensionality (%d), destination dimensionality (%d)", sr, r)
	case im.DType != Int64:
		return Errorf("index_copy_(): Expected a long tensor for index, but got %s", scalarTypeName(im.DType))
	case sm.DType != m.DType:
		return Errorf("index_copy_(): self and source expected to have the same dtype, but got (self) %s and (source) %s", scalarTypeName(m.DType), scalarTypeName(sm.DType))
	}
	ds, ss := slices.Clone(m.Sizes), slices.Clone(sm.Sizes)
	if len(ds) == 0 {
		ds = []int64{1}
	}
	if len(ss) == 0 {
		ss = []int64{1}
	}
	ssize := ss[dim]
	ds, ss = slices.Delete(ds, int(dim), int(dim)+1), slices.Delete(ss, int(dim), int(dim)+1)
	if !slices.Equal(ds, ss) {
		return Errorf("index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: %s at dimension %d and source slice shape: %s at dimension 0.",
			spaced(ds), dim, spaced(ss))
	}
	if sm.Rank() != 0 && n != ssize {
		return IndexErrorf("index_copy_(): Number of indices (%d) should be equal to source.size(dim) (%d)", n, ssize)
	}
	return nil
}

// spaced prints sizes as c10 prints a std::vector: separated by spaces.
func spaced(v []int64) string { return strings.Trim(fmt.Sprint(v), "[]") }

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
// index, source) in the order and words of CPU's meta functions (index_copy_
// has checks of its own) and returns the wrapped dim.
func (c *Ctx) indexArgs(op string) (int64, error) {
	m, im, sm := c.Meta(0), c.Meta(2), c.Meta(3)
	dim, err := wrapDim(c.Int(1, 0), m.Rank())
	if err != nil {
		return 0, err
	}
	if op == "index_copy" {
		if err := indexCopyChecks(m, im, sm, dim); err != nil {
			return 0, err
		}
	} else {
		if im.Rank() > 1 {
			return 0, IndexErrorf("%s_(): Index is supposed to be a vector, but got dim: %d with type: %s and size: %s",
				op, im.Rank(), scalarTypeName(im.DType), shapeString(im.Sizes))
		}
		if im.DType != Int64 && im.DType != Int32 {
			return 0, Errorf("%s_(): Expected dtype int32/int64 for index but got: %s", op, scalarTypeName(im.DType))
		}
		if sm.DType != m.DType {
			return 0, Errorf("%s_(): self (%s) and source (%s) must have the same scalar type", op, scalarTypeName(m.DType), scalarTypeName(sm.DType))
		}
		if dim != 0 && dim >= int64(sm.Rank()) {
			return 0, Errorf("%s_(): Indexing dim %d is out of bounds of the source tensor with dim %d", op, dim, sm.Rank())
		}
		ssize := int64(1)
		if sm.Rank() > 0 {
			ssize = sm.Sizes[dim]
		}
		if im.Numel() != ssize {
			return 0, Errorf("%s_(): Number of indices (%d) should be equal to source.size(dim): (%d), for dim: %d", op, im.Numel(), ssize, dim)
		}
		ss, ds := sm.Sizes, m.Sizes
		if sm.Rank() != 0 && m.Rank() != 0 {
			ss, ds = slices.Delete(slices.Clone(ss), int(dim), int(dim)+1), slices.Delete(slices.Clone(ds), int(dim), int(dim)+1)
		}
		if !slices.Equal(ss, ds) {
			return 0, Errorf("source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = %s source.shape = %s",
				shapeString(m.Sizes), shapeString(sm.Sizes))
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
	m, im := c.Meta(0), c.Meta(2)
	if im.DType != Int64 {
		return nil, IndexErrorf("index_fill_(): Expected dtype int64 for index.")
	}
	dim, err := wrapDim(c.Int(1, 0), m.Rank())
	if err != nil {
		return nil, err
	}
	if im.Rank() > 1 {
		return nil, Errorf("Index has to be a vector/scalar") // a 2-D index was filled as if flattened
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
