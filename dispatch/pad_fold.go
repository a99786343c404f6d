package dispatch

import "torchtpu/hlo"

// gatherAxis takes the elements of x at positions idx (an s64 vector) along dim.
func gatherAxis(b *hlo.Builder, x, idx *hlo.Value, dim int64) *hlo.Value {
	n := idx.T.Shape[0]
	sizes := append([]int64{}, x.T.Shape...)
	slice := append([]int64{}, sizes...)
	slice[dim] = 1
	sizes[dim] = n
	return b.Gather(x, b.Reshape(idx, n, 1), hlo.T(x.T.Elem, sizes...), offsetDimsAround(len(sizes), dim), []int64{dim}, []int64{dim}, 1, slice)
}

// spreadAxes is the transpose of gathering along the trailing axes: g's
// trailing len(idx) dims are sized like the index vectors and each element
// is added to the position its index names, along axes of sizes in.
func spreadAxes(b *hlo.Builder, g *hlo.Value, idx []*hlo.Value, in []int64) *hlo.Value {
	first := int64(g.T.Rank() - len(idx))
	for i, v := range idx {
		n := v.T.Shape[0]
		t := hlo.T(hlo.S64, n, in[i])
		m := b.Compare(hlo.EQ, b.BroadcastInDim(v, t.Shape, []int64{0}), b.Iota(t, 1))
		w := b.Select(m, b.Constant(hlo.T(g.T.Elem, n, in[i]), 1), b.Constant(hlo.T(g.T.Elem, n, in[i]), 0))
		g = b.DotGeneral(g, w, nil, nil, []int64{first}, []int64{0})
	}
	return g
}

// padIndex returns, for a reflection (or replication) pad of lo and hi
// elements around an axis of n, the source of each output element.
func padIndex(b *hlo.Builder, reflect bool, n, lo, hi int64) *hlo.Value {
	t := hlo.T(hlo.S64, n+lo+hi)
	ci := func(v int64) *hlo.Value { return b.ConstantInt(t, v) }
	src := b.Sub(b.Iota(t, 0), ci(lo))
	if !reflect {
		return b.Clamp(ci(0), src, ci(n-1))
	}
	src = b.Abs(src)
	return b.Sub(ci(n-1), b.Abs(b.Sub(ci(n-1), src)))
}

// padArgs checks a reflection or replication pad of n dims and returns the
// index vector of each padded axis, first to last.
func padArgs(c *Ctx, m TensorMeta, reflect bool, n int, padArg int) ([]*hlo.Value, error) {
	pad := c.Ints(padArg, nil)
	if len(pad) != 2*n {
		return nil, Errorf("padding size is expected to be %d, but got: %d", 2*n, len(pad))
	}
	r := m.Rank()
	if (r != n+1 && r != n+2) || emptyBeyondBatch(m.Sizes, n+2) {
		return nil, Errorf("Expected %dD or %dD (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: %s",
			n+1, n+2, shapeString(m.Sizes))
	}
	idx := make([]*hlo.Value, n)
	for i := 0; i < n; i++ {
		size := m.Sizes[r-n+i]
		lo, hi := pad[2*(n-1-i)], pad[2*(n-1-i)+1]
		if reflect && (lo >= size || hi >= size) {
			return nil, Errorf("Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (%d, %d) at dimension %d of input %s",
				lo, hi, r-n+i, shapeString(m.Sizes))
		}
		if size+lo+hi < 1 {
			return nil, Errorf("input (%s) is too small. Calculated output size: %d", shapeString(m.Sizes), size+lo+hi)
		}
		idx[i] = padIndex(c.B, reflect, size, lo, hi)
	}
	return idx, nil
}

// emptyBeyondBatch reports whether a dimension of sizes other than a
// leading batch dimension (present when there are batchRank dims) is empty.
func emptyBeyondBatch(sizes []int64, batchRank int) bool {
	for d, n := range sizes {
		if n == 0 && (d > 0 || len(sizes) != batchRank) {
			return true
		}
	}
	return false
}

// padRule is reflection_padNd / replication_padNd.
func padRule(reflect bool, n int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		idx, err := padArgs(c, m, reflect, n, 1)
		if err != nil {
			return nil, err
		}
		x := c.T(0)
		for i, v := range idx {
			x = gatherAxis(c.B, x, v, int64(m.Rank()-n+i))
		}
		return []*hlo.Value{x}, nil
	}
}

// padBackward is reflection_padNd_backward / replication_padNd_backward.
func padBackward(reflect bool, n int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(1)
		idx, err := padArgs(c, m, reflect, n, 2)
		if err != nil {
			return nil, err
		}
		if !m.DType.IsFloat() && !m.DType.IsComplex() {
			return nil, notImplemented("padding_backward", m.DType)
		}
		b := c.B
		acc := accumElem(m.DType)
		g := spreadAxes(b, b.Convert(c.T(0), acc), idx, m.Sizes[m.Rank()-n:])
		return []*hlo.Value{b.Convert(g, m.DType.Elem())}, nil
	}
}

// foldArgs reads im2col/col2im's kernel, dilation, padding and stride from
// argument k on, for a plane of sizes hw, and returns the window positions
// along each axis in padded coordinates (kernel-major), and the block counts.
func foldArgs(c *Ctx, k int, hw [2]int64) (pos [2]*hlo.Value, kern, blocks, pad [2]int64, err error) {
	var dil, str [2]int64
	for i, dst := range []*[2]int64{&kern, &dil, &pad, &str} {
		xs := c.Ints(k+i, nil)
		if len(xs) != 2 {
			err = Errorf("It is expected kernel_size, dilation, padding and stride to have 2 elements each, but got %d", len(xs))
			return
		}
		*dst = [2]int64{xs[0], xs[1]}
	}
	for i := 0; i < 2; i++ {
		if kern[i] <= 0 || dil[i] <= 0 || str[i] <= 0 || pad[i] < 0 {
			err = Errorf("kernel size, dilation and stride should be greater than zero and padding non-negative, but got kernel_size %v dilation %v padding %v stride %v",
				kern, dil, pad, str)
			return
		}
		blocks[i] = (hw[i]+2*pad[i]-(dil[i]*(kern[i]-1)+1))/str[i] + 1
		if blocks[i] < 1 {
			err = Errorf("Given input with spatial size (%d, %d), kernel_size=(%d, %d), dilation=(%d, %d), padding=(%d, %d), calculated shape of the array of sliding blocks as (%d, %d), but its components must be at least one.",
				hw[0], hw[1], kern[0], kern[1], dil[0], dil[1], pad[0], pad[1], blocks[0], blocks[1])
			return
		}
		t := hlo.T(hlo.S64, kern[i], blocks[i])
		p := c.B.Add(c.B.Mul(c.B.Iota(t, 0), c.B.ConstantInt(t, dil[i])), c.B.Mul(c.B.Iota(t, 1), c.B.ConstantInt(t, str[i])))
		pos[i] = c.B.Reshape(p, kern[i]*blocks[i])
	}
	return
}

// im2col is im2col(self, kernel_size, dilation, padding, stride): every
// sliding block of the (padded) input as a column.
func im2col(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	r := m.Rank()
	if (r != 3 && r != 4) || emptyBeyondBatch(m.Sizes, 4) {
		return nil, Errorf("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: %s", shapeString(m.Sizes))
	}
	n := int64(1)
	if r == 4 {
		n = m.Sizes[0]
	}
	ch := m.Sizes[r-3]
	hw := [2]int64{m.Sizes[r-2], m.Sizes[r-1]}
	pos, k, bl, pad, err := foldArgs(c, 1, hw)
	if err != nil {
		return nil, err
	}
	b := c.B
	x := b.Reshape(c.T(0), n, ch, hw[0], hw[1])
	x = b.Pad(x, b.Scalar(m.DType.Elem(), 0), []int64{0, 0, pad[0], pad[1]}, []int64{0, 0, pad[0], pad[1]}, []int64{0, 0, 0, 0})
	x = gatherAxis(b, x, pos[0], 2)
	x = gatherAxis(b, x, pos[1], 3)
	x = b.Transpose(b.Reshape(x, n, ch, k[0], bl[0], k[1], bl[1]), 0, 1, 2, 4, 3, 5)
	out := []int64{n, ch * k[0] * k[1], bl[0] * bl[1]}
	if r == 3 {
		out = out[1:]
	}
	return []*hlo.Value{b.Reshape(x, out...)}, nil
}

// col2im is col2im(self, output_size, kernel_size, dilation, padding,
// stride): the sum of the columns' elements back into their positions.
func col2im(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	r := m.Rank()
	osz := c.Ints(1, nil)
	if len(osz) != 2 {
		return nil, Errorf("It is expected output_size equals to 2, but got size %d", len(osz))
	}
	if (r != 2 && r != 3) || emptyBeyondBatch(m.Sizes, 3) {
		return nil, Errorf("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: %s", shapeString(m.Sizes))
	}
	hw := [2]int64{osz[0], osz[1]}
	pos, k, bl, pad, err := foldArgs(c, 2, hw)
	if err != nil {
		return nil, err
	}
	n := int64(1)
	if r == 3 {
		n = m.Sizes[0]
	}
	rows, cols := m.Sizes[r-2], m.Sizes[r-1]
	if rows%(k[0]*k[1]) != 0 {
		return nil, Errorf("Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=%d and kernel_size=(%d, %d)", rows, k[0], k[1])
	}
	if cols != bl[0]*bl[1] {
		return nil, Errorf("Given output_size=(%d, %d), kernel_size=(%d, %d), dilation, padding, stride, expected size of input's dimension 2 to match the calculated number of sliding blocks %d * %d = %d, but got input.size(2)=%d.",
			hw[0], hw[1], k[0], k[1], bl[0], bl[1], bl[0]*bl[1], cols)
	}
	if !m.DType.IsFloat() {
		return nil, notImplemented("col2im", m.DType)
	}
	ch := rows / (k[0] * k[1])
	b := c.B
	acc := accumElem(m.DType)
	g := b.Convert(b.Reshape(c.T(0), n, ch, k[0], k[1], bl[0], bl[1]), acc)
	g = b.Reshape(b.Transpose(g, 0, 1, 2, 4, 3, 5), n, ch, k[0]*bl[0], k[1]*bl[1])
	g = spreadAxes(b, g, pos[:], []int64{hw[0] + 2*pad[0], hw[1] + 2*pad[1]})
	g = b.Slice(g, []int64{0, 0, pad[0], pad[1]}, []int64{n, ch, pad[0] + hw[0], pad[1] + hw[1]}, []int64{1, 1, 1, 1})
	out := []int64{n, ch, hw[0], hw[1]}
	if r == 2 {
		out = out[1:]
	}
	return []*hlo.Value{b.Reshape(b.Convert(g, m.DType.Elem()), out...)}, nil
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

func init() {
	for n, suffix := range []string{"", "1d", "2d", "3d"} {
		if n == 0 {
			continue
		}
		for _, reflect := range []bool{true, false} {
			name := "aten::replication_pad" + suffix
			if reflect {
				name = "aten::reflection_pad" + suffix
			}
			def(name, padRule(reflect, n), name+".out")
			def(name+"_backward", padBackward(reflect, n), name+"_backward.grad_input")
		}
	}
	def("aten::im2col", im2col, "aten::im2col.out")
	def("aten::col2im", col2im, "aten::col2im.out")
	def("aten::unfold_backward", unfoldBackward)
}
