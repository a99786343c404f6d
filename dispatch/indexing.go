package dispatch

import (
	"slices"
	"strings"

	"torchtpu/hlo"
)

// advIndex is advanced indexing resolved on the host: the indexed
// dimensions of the source, their int64 index values broadcast to one shape,
// and where the result's index dimensions go.
type advIndex struct {
	dims     []int64      // indexed source dimensions, ascending
	vals     []*hlo.Value // int64 indices of shape bshape, one per dims entry
	bshape   []int64      // the broadcast index shape
	adjacent bool         // indexed dims are consecutive: index dims replace them in place
}

// resolveIndices reads the Tensor?[] argument arg (indices into a tensor of
// the given sizes) to the host, turning bool masks into coordinates and
// checking bounds, as PyTorch does before it indexes. It is a sync point, so
// rules call it before reading any tensor value.
func (c *Ctx) resolveIndices(arg int, sizes []int64) (*advIndex, error) {
	a := c.Args[arg]
	if err := emptyDimIndexed(a.Tensors, sizes); err != nil {
		return nil, err
	}
	var hs []hostIdx
	d := int64(0)
	for k, m := range a.Tensors {
		if !m.Defined {
			d++
			continue
		}
		if m.DType == Bool || m.DType == Uint8 {
			mh, err := c.maskIndices(a.Handles[k], m, d, sizes)
			if err != nil {
				return nil, err
			}
			hs = append(hs, mh...)
			d += int64(m.Rank())
			continue
		}
		h, err := c.integerIndices(a.Handles[k], m, d, len(hs), sizes)
		if err != nil {
			return nil, err
		}
		hs = append(hs, h)
		d++
	}
	return c.broadcastIndices(hs)
}

// emptyDimIndexed is CPU's check, ahead of any index value's: an integer
// index with elements into a dimension of size 0 can hold no valid index.
func emptyDimIndexed(indices []TensorMeta, sizes []int64) error {
	d := 0
	for _, m := range indices {
		switch {
		case !m.Defined:
			d++
		case m.DType == Bool || m.DType == Uint8:
			d += m.Rank()
		default:
			if d < len(sizes) && sizes[d] == 0 && m.Numel() > 0 {
				return IndexErrorf("index is out of bounds for dimension with size 0")
			}
			d++
		}
	}
	return nil
}

// hostIdx is one indexed dimension's indices: values read to the host, or a
// device value when they are not read.
type hostIdx struct {
	dim   int64
	vals  []int64
	shape []int64
	dev   *hlo.Value
}

// maskIndices turns the bool (or uint8) mask handle m, indexing dimensions
// d onward, into the coordinates of its true elements, one index per masked
// dimension; the mask is read to the host.
func (c *Ctx) maskIndices(handle any, m TensorMeta, d int64, sizes []int64) ([]hostIdx, error) {
	if d+int64(m.Rank()) > int64(len(sizes)) {
		return nil, Errorf("too many indices for tensor of dimension %d (got %d)", len(sizes), d+int64(m.Rank()))
	}
	for j, s := range m.Sizes {
		if s != sizes[d+int64(j)] {
			return nil, IndexErrorf("The shape of the mask %s at index %d does not match the shape of the indexed tensor %s at index %d",
				shapeString(m.Sizes), j, shapeString(sizes), d+int64(j))
		}
	}
	mask, err := c.R.Int64s(handle)
	if err != nil {
		return nil, err
	}
	if m.Rank() == 0 { // a 0-dim mask adds a dimension of size 1 or 0
		return nil, Errorf("indexing with a zero-dimensional mask is not supported")
	}
	coords := make([][]int64, m.Rank())
	strides := contiguous(m.Sizes)
	for flat, v := range mask {
		if v == 0 {
			continue
		}
		for j := range coords {
			coords[j] = append(coords[j], (int64(flat)/strides[j])%m.Sizes[j])
		}
	}
	hs := make([]hostIdx, len(coords))
	for j := range coords {
		n := int64(len(coords[j]))
		if len(mask) == 0 {
			n = 0
		}
		hs[j] = hostIdx{dim: d + int64(j), vals: coords[j], shape: []int64{n}}
	}
	return hs, nil
}

// integerIndices checks and wraps the integer index handle m of dimension
// d: read to the host and range-checked, or, inside a compiled program, kept
// on the device (negative entries wrapped, no range check). pos is the
// index's place among the indexed dimensions, which CPU's message names.
func (c *Ctx) integerIndices(handle any, m TensorMeta, d int64, pos int, sizes []int64) (hostIdx, error) {
	if !m.DType.IsIntegral(false) {
		return hostIdx{}, IndexErrorf("tensors used as indices must be long, int, byte or bool tensors")
	}
	if d >= int64(len(sizes)) {
		return hostIdx{}, Errorf("too many indices for tensor of dimension %d (got %d)", len(sizes), d+1)
	}
	size := sizes[d]
	// Indices whose range is known to be valid (made by arange, say) need no
	// read: they are wrapped on the device.
	if c.NoHostChecks || c.handleWithin(handle, -size, size-1) {
		return hostIdx{dim: d, shape: m.Sizes, dev: wrapIndices(c.B, c.R.Read(handle), m.Sizes, size)}, nil
	}
	vals, err := c.R.Int64s(handle)
	if err != nil {
		return hostIdx{}, err
	}
	for i, v := range vals {
		if v < -size || v >= size {
			return hostIdx{}, IndexErrorf("index %d is out of bounds for dimension %d with size %d", v, pos, size)
		}
		if v < 0 {
			vals[i] = v + size
		}
	}
	return hostIdx{dim: d, vals: vals, shape: m.Sizes}, nil
}

// broadcastIndices broadcasts the indices of every indexed dimension to one
// shape, uploading those read to the host.
func (c *Ctx) broadcastIndices(hs []hostIdx) (*advIndex, error) {
	if len(hs) == 0 {
		return nil, Errorf("at least one index must be a tensor")
	}
	shapes := make([][]int64, len(hs))
	for i, h := range hs {
		shapes[i] = h.shape
	}
	bshape, err := BroadcastShapes(shapes...)
	if err != nil {
		names := make([]string, len(shapes))
		for i, sh := range shapes {
			names[i] = shapeString(sh)
		}
		return nil, IndexErrorf("shape mismatch: indexing tensors could not be broadcast together with shapes %s",
			strings.Join(names, ", "))
	}
	ai := &advIndex{bshape: bshape, adjacent: true}
	for i, h := range hs {
		ai.dims = append(ai.dims, h.dim)
		if i > 0 && h.dim != hs[i-1].dim+1 {
			ai.adjacent = false
		}
		v := h.dev
		if v == nil {
			v = c.R.Int64Tensor(h.vals, h.shape)
		}
		ai.vals = append(ai.vals, c.B.BroadcastTo(v, bshape))
	}
	return ai, nil
}

// wrapIndices converts the index value v (of the given shape) to int64 and
// wraps negative entries by size.
func wrapIndices(b *hlo.Builder, v *hlo.Value, shape []int64, size int64) *hlo.Value {
	v = b.Convert(v, hlo.S64)
	neg := b.Compare(hlo.LT, v, full(b, Int64, shape, 0))
	return b.Select(neg, b.Add(v, full(b, Int64, shape, float64(size))), v)
}

func contiguous(sizes []int64) []int64 {
	st := make([]int64, len(sizes))
	acc := int64(1)
	for i := len(sizes) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= max(sizes[i], 1)
	}
	return st
}

// layout returns the result shape of indexing sizes with ai, the offset
// (slice) dims' positions in it, and the unindexed source dims in order.
func (ai *advIndex) layout(sizes []int64) (out, offsetDims, rest []int64) {
	indexed := map[int64]bool{}
	for _, d := range ai.dims {
		indexed[d] = true
	}
	for d := range sizes {
		if !indexed[int64(d)] {
			rest = append(rest, int64(d))
		}
	}
	first := int64(0)
	if ai.adjacent {
		first = ai.dims[0]
	}
	// Unindexed dims before the index block keep their place; the rest follow it.
	for _, d := range rest {
		if ai.adjacent && d < first {
			offsetDims = append(offsetDims, int64(len(out)))
			out = append(out, sizes[d])
		}
	}
	out = append(out, ai.bshape...)
	for _, d := range rest {
		if !(ai.adjacent && d < first) {
			offsetDims = append(offsetDims, int64(len(out)))
			out = append(out, sizes[d])
		}
	}
	return out, offsetDims, rest
}

// stacked returns the index values stacked along a new last dimension.
func (ai *advIndex) stacked(b *hlo.Builder) *hlo.Value {
	shape := append(append([]int64{}, ai.bshape...), 1)
	parts := make([]*hlo.Value, len(ai.vals))
	for i, v := range ai.vals {
		parts[i] = b.Reshape(v, shape...)
	}
	return b.Concatenate(len(ai.bshape), parts...)
}

// indexRule is index.Tensor(self, Tensor?[] indices): advanced indexing.
func indexRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	ai, err := c.resolveIndices(1, m.Sizes)
	if err != nil {
		return nil, err
	}
	out, offsetDims, _ := ai.layout(m.Sizes)
	slice := append([]int64{}, m.Sizes...)
	for _, d := range ai.dims {
		slice[d] = 1
	}
	if numel(out) == 0 {
		return []*hlo.Value{full(c.B, m.DType, out, 0)}, nil
	}
	g := c.B.Gather(c.T(0), ai.stacked(c.B), hlo.T(m.DType.Elem(), out...), offsetDims, ai.dims, ai.dims,
		int64(len(ai.bshape)), slice)
	return []*hlo.Value{g}, nil
}

// indexPut is index_put(self, Tensor?[] indices, values, accumulate): values
// broadcast to the indexing result's shape are scattered into self.
func indexPut(c *Ctx) ([]*hlo.Value, error) {
	m, vm := c.Meta(0), c.Meta(2)
	ai, err := c.resolveIndices(1, m.Sizes)
	if err != nil {
		return nil, err
	}
	out, offsetDims, _ := ai.layout(m.Sizes)
	if bs, err := BroadcastShapes(out, vm.Sizes); err != nil || len(vm.Sizes) > len(out) || !slices.Equal(bs, out) {
		return nil, Errorf("shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of shape %s",
			shapeString(vm.Sizes), shapeString(out))
	}
	if vm.DType != m.DType {
		return nil, Errorf("Index put requires the source and destination dtypes match, got %s for the destination and %s for the source.",
			scalarTypeName(m.DType), scalarTypeName(vm.DType))
	}
	x := c.T(0)
	if numel(out) == 0 {
		return []*hlo.Value{x}, nil
	}
	upd := c.B.BroadcastTo(c.T(2), out)
	var combine func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value
	if c.Bool(3, false) {
		combine = func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value {
			if m.DType == Bool {
				return rb.Or(old, new)
			}
			return rb.Add(old, new)
		}
	}
	r := c.B.Scatter(x, ai.stacked(c.B), upd, offsetDims, ai.dims, ai.dims, int64(len(ai.bshape)), combine)
	return []*hlo.Value{r}, nil
}

// nonzero is nonzero(self): the int64 coordinates of the nonzero elements,
// one row each, found on the host after a sync.
func nonzero(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	coords, n, err := nonzeroCoords(c, -1)
	if err != nil {
		return nil, err
	}
	shape := []int64{n, int64(m.Rank())}
	if n == 0 || m.Rank() == 0 {
		if m.Rank() == 0 && n == 1 {
			return []*hlo.Value{full(c.B, Int64, []int64{1, 0}, 0)}, nil
		}
		return []*hlo.Value{full(c.B, Int64, shape, 0)}, nil
	}
	return []*hlo.Value{c.R.Int64Tensor(coords, shape)}, nil
}

// nonzeroCoords reads tensor argument 0 on the host (a sync) and returns the
// row-major coordinates of its first limit nonzero elements (all of them when
// limit < 0), rank values per element, and how many elements that is.
func nonzeroCoords(c *Ctx, limit int64) ([]int64, int64, error) {
	m := c.Meta(0)
	var vals []int64
	var err error
	if m.DType.IsFloat() || m.DType.IsComplex() {
		vals, err = c.R.Int64Values(c.B.Compare(hlo.NE, c.T(0), full(c.B, m.DType, m.Sizes, 0)))
	} else {
		vals, err = c.R.Int64s(c.Args[0].Handles[0])
	}
	if err != nil {
		return nil, 0, err
	}
	strides := contiguous(m.Sizes)
	var coords []int64
	n := int64(0)
	for flat, v := range vals {
		if v == 0 {
			continue
		}
		if n == limit {
			break
		}
		n++
		for j := range m.Sizes {
			coords = append(coords, (int64(flat)/strides[j])%m.Sizes[j])
		}
	}
	return coords, n, nil
}

// maskPositions returns the flat positions in shape where mask (of sizes
// msizes, broadcast to shape) is nonzero, in row-major order.
func maskPositions(mask []int64, msizes, shape []int64) []int64 {
	mstr := contiguous(msizes)
	ostr := contiguous(shape)
	off := len(shape) - len(msizes)
	var pos []int64
	for flat := int64(0); flat < numel(shape); flat++ {
		src := int64(0)
		for j := range msizes {
			if msizes[j] != 1 {
				src += (flat / ostr[off+j]) % shape[off+j] * mstr[j]
			}
		}
		if mask[src] != 0 {
			pos = append(pos, flat)
		}
	}
	return pos
}

// maskedSelect is masked_select(self, mask): the elements where the broadcast mask holds.
func maskedSelect(c *Ctx) ([]*hlo.Value, error) {
	m, mm := c.Meta(0), c.Meta(1)
	if mm.DType != Bool {
		return nil, Errorf("masked_select: expected BoolTensor for mask")
	}
	shape, err := BroadcastShapes(m.Sizes, mm.Sizes)
	if err != nil {
		return nil, err
	}
	mask, err := c.R.Int64s(c.Args[1].Handles[0])
	if err != nil {
		return nil, err
	}
	// Broadcast the mask on the host, then gather the selected flat positions.
	pos := maskPositions(mask, mm.Sizes, shape)
	if len(pos) == 0 {
		return []*hlo.Value{full(c.B, m.DType, []int64{0}, 0)}, nil
	}
	x := c.B.Reshape(c.B.BroadcastTo(c.T(0), shape), numel(shape))
	return []*hlo.Value{c.B.GatherFlat(x, c.R.Int64Tensor(pos, []int64{int64(len(pos))}))}, nil
}

// repeatInterleave is repeat_interleave.Tensor(repeats, *, output_size):
// index i repeated repeats[i] times, computed on the host after a sync.
func repeatInterleave(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if m.Rank() > 1 {
		return nil, Errorf("repeat_interleave: repeats must be 0-dim or 1-dim tensor")
	}
	reps, err := c.R.Int64s(c.Args[0].Handles[0])
	if err != nil {
		return nil, err
	}
	var out []int64
	for i, r := range reps {
		if r < 0 {
			return nil, Errorf("repeat_interleave: repeats can not be negative")
		}
		for k := int64(0); k < r; k++ {
			out = append(out, int64(i))
		}
	}
	if c.Has(1) && c.Int(1, 0) != int64(len(out)) {
		return nil, Errorf("allocated size does not match required size")
	}
	if len(out) == 0 {
		return []*hlo.Value{full(c.B, Int64, []int64{0}, 0)}, nil
	}
	return []*hlo.Value{c.R.Int64Tensor(out, []int64{int64(len(out))})}, nil
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

func init() {
	def("aten::index.Tensor", indexRule, "aten::index.Tensor_out").Needs = hostIndices
	r := def("aten::index_put", indexPut)
	r.Needs = hostIndices
	alias("aten::_index_put_impl_", r, Inplace)
	def("aten::nonzero", nonzero).Needs = Needs{HostArgs: []int{0}, Results: true, Uploads: true}
	ms := def("aten::masked_select", maskedSelect)
	ms.Needs, ms.OutNoOverlap = Needs{HostArgs: []int{1}, Uploads: true}, true
	def("aten::repeat_interleave.Tensor", repeatInterleave, "aten::repeat_interleave.Tensor_out").Needs = Needs{HostArgs: []int{0}, Uploads: true}
	def("aten::masked_scatter", maskedScatter).Needs = Needs{HostArgs: []int{1}, Uploads: true}
}
