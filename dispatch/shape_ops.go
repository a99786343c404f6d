package dispatch

import "torchtpu/hlo"

// catRule is cat(Tensor[] tensors, int dim=0). The dtype is the promotion
// over all inputs; legacy empty 1-D tensors (size [0]) are skipped.
func catRule(c *Ctx) ([]*hlo.Value, error) {
	metas := c.Args[0].Tensors
	if len(metas) == 0 {
		return nil, Errorf("torch.cat(): expected a non-empty list of Tensors")
	}
	d := Undefined
	ref := -1
	for i, m := range metas {
		d = PromoteTypes(d, m.DType)
		if m.Rank() == 0 {
			return nil, Errorf("zero-dimensional tensor (at position %d) cannot be concatenated", i)
		}
		if ref < 0 && !(m.Rank() == 1 && m.Sizes[0] == 0) {
			ref = i
		}
	}
	if ref < 0 { // every input is a legacy empty tensor
		return []*hlo.Value{full(c.B, d, []int64{0}, 0)}, nil
	}
	r := metas[ref]
	dim, err := wrapDim(c.Int(1, 0), r.Rank())
	if err != nil {
		return nil, err
	}
	var inputs []int // the inputs concatenated
	for i, m := range metas {
		if m.Rank() == 1 && m.Sizes[0] == 0 {
			continue
		}
		if m.Rank() != r.Rank() {
			return nil, Errorf("Tensors must have same number of dimensions: got %d and %d", r.Rank(), m.Rank())
		}
		for k := range m.Sizes {
			if int64(k) != dim && m.Sizes[k] != r.Sizes[k] {
				return nil, Errorf("Sizes of tensors must match except in dimension %d. Expected size %d but got size %d for tensor number %d in the list.",
					dim, r.Sizes[k], m.Sizes[k], i)
			}
		}
		inputs = append(inputs, i)
	}
	if out, ok := catAppend(c, d, int(dim), inputs); ok {
		return []*hlo.Value{out}, nil
	}
	vals := c.List(0)
	parts := make([]*hlo.Value, len(inputs))
	for k, i := range inputs {
		parts[k] = c.B.Convert(vals[i], d.Elem())
	}
	return []*hlo.Value{c.B.Concatenate(int(dim), parts...)}, nil
}

// catAppend lowers cat along dim as an append (padded.go). When the first
// input is held padded along dim, the result is its padded value with the
// others written at its size: one program for every size up to the
// capacity (grown to the next one when they do not fit). A first input not
// held padded whose own value is an append, with the others small beside it
// (together at most a quarter of its size), starts padding: that is a loop
// appending a step at a time. A first append only marks its result as one
// (its value is the plain concatenation), so a cat done once never pads.
// ok is false when none of these applies or padding is off.
func catAppend(c *Ctx, d DType, dim int, inputs []int) (*hlo.Value, bool) {
	if len(inputs) < 2 {
		return nil, false
	}
	metas, hs := c.Args[0].Tensors, c.Args[0].Handles
	n0, rest := metas[inputs[0]].Sizes[dim], int64(0)
	for _, i := range inputs[1:] {
		rest += metas[i].Sizes[dim]
	}
	if rest == 0 {
		return nil, false
	}
	capacity, ok := c.padCapacity(n0 + rest)
	if !ok {
		return nil, false
	}
	_, held := c.paddedCap(0, inputs[0], dim)
	if !held && 4*rest > n0 {
		return nil, false
	}
	first := !held && !c.appended(inputs[0], dim)
	var p Padded
	if held {
		p, _ = c.readPadded(0, inputs[0], dim)
		if n0+rest <= p.Cap {
			capacity = p.Cap
		}
	}
	b := c.B
	tail := make([]*hlo.Value, 0, len(inputs)-1)
	for _, i := range inputs[1:] {
		tail = append(tail, b.Convert(c.R.Read(hs[i]), d.Elem()))
	}
	app := tail[0]
	if len(tail) > 1 {
		app = b.Concatenate(dim, tail...)
	}
	var out *hlo.Value
	if held {
		starts := make([]*hlo.Value, app.T.Rank())
		for k := range starts {
			starts[k] = b.ConstantInt(hlo.T(hlo.S64), 0)
		}
		starts[dim] = p.Size
		out = b.DynamicUpdateSlice(padTo(b, b.Convert(p.V, d.Elem()), dim, capacity), app, starts)
	} else {
		out = b.Concatenate(dim, b.Convert(c.R.Read(hs[inputs[0]]), d.Elem()), app)
	}
	if first {
		c.AppendedAt(0, dim) // a first append: marked, not padded
		return out, true
	}
	if !held {
		out = padTo(b, out, dim, capacity)
	}
	c.PadResultAt(0, dim, n0+rest)
	return out, true
}

// rangeReader is a Reader that may know the value range of an integer
// argument without reading it (indices uploaded from the host).
type rangeReader interface {
	IntRange(handle any) (lo, hi int64, ok bool)
}

// checkIndices reads index argument i to the host and checks 0 <= v < size.
func (c *Ctx) checkIndices(i int, size int64, msg func(v int64) error) error {
	if c.NoHostChecks || c.knownWithin(i, 0, size-1) {
		return nil
	}
	vs, err := c.R.Int64s(c.Args[i].Handles[0])
	if err != nil {
		return err
	}
	for _, v := range vs {
		if v < 0 || v >= size {
			return msg(v)
		}
	}
	return nil
}

// knownWithin reports whether the engine knows, without a device read, that
// every value of integer tensor argument i lies in [lo, hi] (intrange.go).
func (c *Ctx) knownWithin(i int, lo, hi int64) bool {
	return c.handleWithin(c.Args[i].Handles[0], lo, hi)
}

// handleWithin is knownWithin for the tensor of a handle.
func (c *Ctx) handleWithin(handle any, lo, hi int64) bool {
	rr, ok := c.R.(rangeReader)
	if !ok {
		return false
	}
	l, h, known := rr.IntRange(handle)
	return known && l >= lo && h <= hi
}

// indexSelect is index_select(self, dim, index).
func indexSelect(c *Ctx) ([]*hlo.Value, error) {
	m, im := c.Meta(0), c.Meta(2)
	dim, err := wrapDim(c.Int(1, 0), m.Rank())
	if err != nil {
		return nil, err
	}
	if im.DType != Int64 && im.DType != Int32 {
		return nil, Errorf("index_select(): Expected dtype int32 or int64 for index")
	}
	if im.Rank() > 1 {
		return nil, IndexErrorf("index_select(): Index is supposed to be a vector")
	}
	size := int64(1)
	if m.Rank() > 0 {
		size = m.Sizes[dim]
	}
	if err := c.checkIndices(2, size, func(int64) error { return IndexErrorf("index out of range in self") }); err != nil {
		return nil, err
	}
	x := c.T(0)
	n := im.Numel()
	idx := c.B.Reshape(c.B.Convert(c.T(2), hlo.S64), n)
	if m.Rank() == 0 {
		return []*hlo.Value{c.B.Reshape(x)}, nil
	}
	// Gather whole slices of x along dim, one per index.
	out := append([]int64{}, m.Sizes...)
	out[dim] = n
	if numel(out) == 0 { // nothing to gather (and no slice of an empty dim to gather it with)
		return []*hlo.Value{c.B.BroadcastTo(c.B.Scalar(m.DType.Elem(), 0), out)}, nil
	}
	slice := append([]int64{}, m.Sizes...)
	slice[dim] = 1
	// The result's batch dimension (one per index) sits at position dim.
	g := c.B.Gather(x, c.B.Reshape(idx, n, 1), gatherOutType(m, dim, n), offsetDimsAround(m.Rank(), dim), []int64{dim}, []int64{dim}, 1, slice)
	return []*hlo.Value{c.B.Reshape(g, out...)}, nil
}

// gatherOutType is x's type with dimension dim resized to n.
func gatherOutType(m TensorMeta, dim int64, n int64) hlo.Type {
	s := append([]int64{}, m.Sizes...)
	s[dim] = n
	return hlo.T(m.DType.Elem(), s...)
}

// offsetDimsAround lists the result dims other than dim.
func offsetDimsAround(rank int, dim int64) []int64 {
	var out []int64
	for k := 0; k < rank; k++ {
		if int64(k) != dim {
			out = append(out, int64(k))
		}
	}
	return out
}

// fullIndices builds, for an index tensor idx selecting along dim, the
// coordinates [..., rank] of every element: iota on the other dims.
func fullIndices(b *hlo.Builder, idx *hlo.Value, dim int64) *hlo.Value {
	r := idx.T.Rank()
	shape := append(append([]int64{}, idx.T.Shape...), 1)
	parts := make([]*hlo.Value, r)
	for k := 0; k < r; k++ {
		if int64(k) == dim {
			parts[k] = b.Reshape(b.Convert(idx, hlo.S64), shape...)
		} else {
			parts[k] = b.Iota(hlo.T(hlo.S64, shape...), k)
		}
	}
	return b.Concatenate(r, parts...)
}

// checkGatherIndex checks gather/scatter's index against self (and src).
func checkGatherIndex(op string, m, im TensorMeta, dim int64, src *TensorMeta) error {
	if im.DType != Int64 && im.DType != Int32 && im.Numel() > 0 {
		return Errorf("%s(): Expected dtype int64 for index", op)
	}
	if im.Numel() == 0 {
		return nil // CPU checks no shapes against an empty index
	}
	if im.Rank() != m.Rank() && !(im.Rank() <= 1 && m.Rank() <= 1) {
		if op == "gather" {
			return Errorf("Index tensor must have the same number of dimensions as input tensor")
		}
		return Errorf("Index tensor must have the same number of dimensions as self tensor")
	}
	if src != nil && im.Numel() > 0 && src.Rank() != im.Rank() && !(im.Rank() <= 1 && src.Rank() <= 1) {
		return Errorf("Index tensor must have the same number of dimensions as src tensor")
	}
	for k := 0; k < im.Rank() && k < m.Rank(); k++ {
		if int64(k) == dim {
			continue
		}
		if im.Sizes[k] > m.Sizes[k] {
			if src != nil {
				return Errorf("Expected index %s to be no larger than self %s apart from dimension %d and to be no larger size than src %s",
					shapeString(im.Sizes), shapeString(m.Sizes), dim, shapeString(src.Sizes))
			}
			return Errorf("Size does not match at dimension %d expected index %s to be no larger than self %s apart from dimension %d",
				k, shapeString(im.Sizes), shapeString(m.Sizes), dim)
		}
	}
	if src != nil {
		for k := 0; k < im.Rank() && k < src.Rank(); k++ {
			if im.Sizes[k] > src.Sizes[k] {
				return Errorf("Expected index %s to be no larger than self %s apart from dimension %d and to be no larger size than src %s",
					shapeString(im.Sizes), shapeString(m.Sizes), dim, shapeString(src.Sizes))
			}
		}
	}
	return nil
}

func (c *Ctx) checkDimIndex(i int, m TensorMeta, dim int64) error {
	size := int64(1)
	if m.Rank() > 0 {
		size = m.Sizes[dim]
	}
	return c.checkIndices(i, size, func(v int64) error {
		return Errorf("index %d is out of bounds for dimension %d with size %d", v, dim, size)
	})
}

// gatherRule is gather(self, dim, index, *, sparse_grad).
func gatherRule(c *Ctx) ([]*hlo.Value, error) {
	m, im := c.Meta(0), c.Meta(2)
	dim, err := wrapDim(c.Int(1, 0), m.Rank())
	if err != nil {
		return nil, err
	}
	if err := checkGatherIndex("gather", m, im, dim, nil); err != nil {
		return nil, err
	}
	if err := c.checkDimIndex(2, m, dim); err != nil {
		return nil, err
	}
	b := c.B
	if im.Numel() == 0 {
		return []*hlo.Value{full(b, m.DType, im.Sizes, 0)}, nil
	}
	if m.Rank() == 0 { // every index is 0 (checked above)
		return []*hlo.Value{b.BroadcastTo(c.T(0), im.Sizes)}, nil
	}
	r := int64(m.Rank())
	idx, sizes := c.T(2), im.Sizes
	if im.Rank() == 0 { // CPU reads a 0-dim index of a 1-D input as one element
		idx, sizes = b.Reshape(idx, 1), []int64{1}
	}
	ind := fullIndices(b, idx, dim)
	ones := make([]int64, r)
	for k := range ones {
		ones[k] = 1
	}
	out := hlo.T(m.DType.Elem(), sizes...)
	g := b.Gather(c.T(0), ind, out, nil, iotaDims(int(r)), iotaDims(int(r)), r, ones)
	return []*hlo.Value{b.Reshape(g, im.Sizes...)}, nil
}

// scatterRule builds scatter.src / scatter.value / scatter_add(self, dim,
// index, src|value). With add the updates accumulate.
func scatterRule(op string, add bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m, im := c.Meta(0), c.Meta(2)
		dim, err := wrapDim(c.Int(1, 0), m.Rank())
		if err != nil {
			return nil, err
		}
		var src *TensorMeta
		if c.IsTensor(3) {
			s := c.Meta(3)
			src = &s
			if s.DType != m.DType {
				return nil, Errorf("%s(): Expected self.dtype to be equal to src.dtype", op)
			}
		}
		if err := checkGatherIndex(op, m, im, dim, src); err != nil {
			return nil, err
		}
		if err := c.checkDimIndex(2, m, dim); err != nil {
			return nil, err
		}
		b := c.B
		x := c.T(0)
		if im.Numel() == 0 {
			return []*hlo.Value{x}, nil
		}
		var upd *hlo.Value
		if src != nil {
			upd = c.T(3)
			if src.Rank() == 0 {
				upd = b.Reshape(upd, im.Sizes...)
			} else {
				zeros := make([]int64, src.Rank())
				ones := make([]int64, src.Rank())
				for k := range ones {
					ones[k] = 1
				}
				upd = b.Slice(upd, zeros, im.Sizes, ones)
			}
		} else {
			upd = b.BroadcastTo(c.Value(3, m.DType), im.Sizes)
		}
		if m.Rank() == 0 {
			x = b.Reshape(x, 1)
			upd = b.Reshape(upd, 1)
			var combine func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value
			if add {
				combine = addCombine
			}
			r := b.ScatterFlat(x, b.Reshape(b.Convert(c.T(2), hlo.S64), 1), upd, combine)
			return []*hlo.Value{b.Reshape(r)}, nil
		}
		r := int64(m.Rank())
		ind := fullIndices(b, c.T(2), dim)
		var combine func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value
		if add {
			combine = addCombine
		}
		return []*hlo.Value{b.Scatter(x, ind, upd, nil, iotaDims(int(r)), iotaDims(int(r)), r, combine)}, nil
	}
}

func addCombine(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value {
	if old.T.Elem == hlo.Pred {
		return rb.Or(old, new)
	}
	return rb.Add(old, new)
}

// flipRule is flip(self, dims).
func flipRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	dims, _, err := c.reduceDims(1, m.Rank(), false)
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{c.B.Reverse(c.T(0), dims...)}, nil
}

// rollRule is roll(self, shifts, dims=[]): with no dims the flattened
// tensor rolls.
func rollRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	shifts, dims := c.Ints(1, nil), c.Ints(2, nil)
	if len(shifts) == 0 {
		return nil, Errorf("`shifts` required")
	}
	if len(shifts) != len(dims) && !(len(dims) == 0 && len(shifts) == 1) {
		return nil, Errorf("shifts and dimensions must align. shifts: %d, dims:%d", len(shifts), len(dims))
	}
	b, x := c.B, c.T(0)
	if len(dims) == 0 {
		flat := b.Reshape(x, m.Numel())
		return []*hlo.Value{b.Reshape(rollDim(b, flat, 0, shifts[0]), m.Sizes...)}, nil
	}
	for k, d := range dims {
		if m.Rank() == 0 {
			return nil, IndexErrorf("Dimension specified as %d but tensor has no dimensions", d)
		}
		w, err := wrapDim(d, m.Rank())
		if err != nil {
			return nil, err
		}
		if m.Rank() > 0 {
			x = rollDim(b, x, w, shifts[k])
		}
	}
	return []*hlo.Value{x}, nil
}

// rollDim rotates x by shift along dim (elements move toward higher indices).
func rollDim(b *hlo.Builder, x *hlo.Value, dim int64, shift int64) *hlo.Value {
	n := x.T.Shape[dim]
	if n == 0 {
		return x
	}
	s := ((shift % n) + n) % n
	if s == 0 {
		return x
	}
	r := x.T.Rank()
	start, limit, strides := make([]int64, r), append([]int64{}, x.T.Shape...), make([]int64, r)
	for k := range strides {
		strides[k] = 1
	}
	start[dim], limit[dim] = n-s, n
	tail := b.Slice(x, start, limit, strides)
	start[dim], limit[dim] = 0, n-s
	head := b.Slice(x, start, limit, strides)
	return b.Concatenate(int(dim), tail, head)
}

// triRule is tril/triu(self, diagonal): keeps elements with col - row <= k
// (tril) or >= k (triu) in the last two dims.
func triRule(name string, lower bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		if m.Rank() < 2 {
			return nil, Errorf("%s: input tensor must have at least 2 dimensions", name)
		}
		b, x := c.B, c.T(0)
		r := m.Rank()
		it := hlo.T(hlo.S64, m.Sizes...)
		diff := b.Sub(b.Iota(it, r-1), b.Iota(it, r-2))
		k := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), c.Int(1, 0)), m.Sizes)
		var keep *hlo.Value
		if lower {
			keep = b.Compare(hlo.LE, diff, k)
		} else {
			keep = b.Compare(hlo.GE, diff, k)
		}
		return []*hlo.Value{b.Select(keep, x, full(b, m.DType, m.Sizes, 0))}, nil
	}
}

// constantPadND is constant_pad_nd(self, pad, value): pad pairs apply to the
// last dims first; negative pads crop.
func constantPadND(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	pad := c.Ints(1, nil)
	if len(pad)%2 != 0 {
		return nil, Errorf("Length of pad must be even but instead it equals %d", len(pad))
	}
	if len(pad)/2 > m.Rank() {
		return nil, Errorf("Length of pad should be no more than twice the number of dimensions of the input. Pad length is %dwhile the input has %ddimensions.", len(pad), m.Rank())
	}
	r := m.Rank()
	lo, hi, in := make([]int64, r), make([]int64, r), make([]int64, r)
	for k := 0; k < len(pad)/2; k++ {
		d := r - 1 - k
		lo[d], hi[d] = pad[2*k], pad[2*k+1]
		if m.Sizes[d]+lo[d]+hi[d] < 0 {
			return nil, Errorf("The input size %d, plus negative padding %d and %d resulted in a negative output size, which is invalid. Check dimension %d of your input.",
				m.Sizes[d], lo[d], hi[d], d)
		}
	}
	grows := false
	for d := range lo {
		grows = grows || lo[d] > 0 || hi[d] > 0
	}
	if grows && c.Has(2) {
		// CPU fills the padded result with the value, which must fit the dtype.
		if err := checkScalarFits(c.Args[2], m.DType); err != nil {
			return nil, err
		}
	}
	e := m.DType.Elem()
	v := c.Float(2, 0)
	return []*hlo.Value{c.B.Pad(c.T(0), c.R.Scalar(v, e), lo, hi, in)}, nil
}

// maskedFill is masked_fill(self, mask, value) with a number or a 0-dim tensor.
func maskedFill(c *Ctx) ([]*hlo.Value, error) {
	m, mm := c.Meta(0), c.Meta(1)
	if mm.DType != Bool {
		return nil, Errorf("masked_fill_ only supports boolean masks, but got mask with dtype %s", cppName(mm.DType))
	}
	if c.IsTensor(2) && c.Meta(2).Rank() != 0 {
		return nil, Errorf("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with %d dimension(s).", c.Meta(2).Rank())
	}
	shape, err := BroadcastShapes(mm.Sizes, m.Sizes) // CPU names the mask's size first
	if err != nil {
		return nil, err
	}
	if err := checkScalarFits(c.Args[2], m.DType); err != nil {
		return nil, err
	}
	if c.IsTensor(2) && c.Meta(2).DType.IsComplex() && !m.DType.IsComplex() {
		// CPU converts the value's item, which fails for a complex number unless its imaginary
		// part is zero; the value stays on the device here, so any complex value is refused.
		return nil, Errorf("value cannot be converted to type %s without overflow", scalarTypeCName(m.DType))
	}
	b := c.B
	x := b.BroadcastTo(c.T(0), shape)
	p := b.BroadcastTo(c.T(1), shape)
	v := b.BroadcastTo(c.Value(2, m.DType), shape)
	return []*hlo.Value{b.Select(p, v, x)}, nil
}

// channelShuffle is channel_shuffle(self, groups): channels viewed as
// [groups, C/groups] and transposed.
func channelShuffle(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	gr := c.Int(1, 1)
	if m.Rank() < 3 {
		return nil, Errorf("channel_shuffle expects input to have at least 3 dimensions, but got input with sizes %s", shapeString(m.Sizes))
	}
	if gr <= 0 {
		return nil, Errorf("Number of groups to divide channels in must be positive. Value of groups:%d", gr)
	}
	ch := m.Sizes[1]
	if ch%gr != 0 {
		return nil, Errorf("Number of channels must be divisible by groups. Got %d channels and %d groups.", ch, gr)
	}
	b := c.B
	split := append([]int64{m.Sizes[0], gr, ch / gr}, m.Sizes[2:]...)
	perm := []int64{0, 2, 1}
	for i := 3; i < len(split); i++ {
		perm = append(perm, int64(i))
	}
	return []*hlo.Value{b.Reshape(b.Transpose(b.Reshape(c.T(0), split...), perm...), m.Sizes...)}, nil
}

func init() {
	// Their CPU kernels refuse an out that shares memory with an input.
	cat := def("aten::cat", catRule)
	cat.OutNoOverlap, cat.Range = true, catRange
	is := def("aten::index_select", indexSelect)
	is.Needs, is.OutNoOverlap = hostArgs(2), true
	ga := def("aten::gather", gatherRule)
	ga.Needs, ga.OutNoOverlap = hostArgs(2), true
	def("aten::scatter.src", scatterRule("scatter", false), "aten::scatter.src_out").Needs = hostArgs(2)
	def("aten::scatter.value", scatterRule("scatter", false), "aten::scatter.value_out").Needs = hostArgs(2)
	def("aten::scatter_add", scatterRule("scatter_add", true)).Needs = hostArgs(2)
	def("aten::flip", flipRule)
	def("aten::roll", rollRule)
	def("aten::tril", triRule("tril", true))
	def("aten::triu", triRule("triu", false))
	def("aten::constant_pad_nd", constantPadND)
	mf := def("aten::masked_fill.Scalar", maskedFill, "aten::masked_fill.Scalar_out")
	mf.ComplexScalar, mf.Range = 2, selectRange(1, 2, 0)
	def("aten::masked_fill.Tensor", maskedFill, "aten::masked_fill.Tensor_out").Range = selectRange(1, 2, 0)
	def("aten::channel_shuffle", channelShuffle, "aten::channel_shuffle.out")
}
