package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// pool2d holds a 2-d pooling window's attributes and sizes, per (H, W).
type pool2d struct {
	k, s, p, d [2]int64
	in, out    [2]int64
	batched    bool
	n, ch      int64
	ceil       bool
}

// pair reads int-list argument i as two values (one value repeats), or def when empty.
func (c *Ctx) pair(i int, name string, def [2]int64, emptyDef bool) ([2]int64, error) {
	xs := c.Ints(i, nil)
	switch {
	case len(xs) == 0 && emptyDef:
		return def, nil
	case len(xs) == 1:
		return [2]int64{xs[0], xs[0]}, nil
	case len(xs) == 2:
		return [2]int64{xs[0], xs[1]}, nil
	}
	return def, Errorf("max_pool2d: %s must either be a single int, or a tuple of two ints", name)
}

// poolOut is PyTorch's pooling_output_shape.
func poolOut(in, k, p, s, d int64, ceil bool) int64 {
	num := in + 2*p - d*(k-1) - 1
	if ceil {
		num += s - 1
	}
	out := divFloor(num, s) + 1
	if ceil && (out-1)*s >= in+p {
		out--
	}
	return out
}

func divFloor(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// poolArgs reads a pooling window from arguments kernel, kernel+1 (stride),
// kernel+2 (padding) and dil (dilation, or none when dil < 0), and the
// ceil_mode argument ceil, for input in; it checks them as PyTorch does.
func (c *Ctx) poolArgs(in TensorMeta, kernel, dil, ceil int) (pool2d, error) {
	var q pool2d
	var err error
	if q.k, err = c.pair(kernel, "kernel_size", [2]int64{}, false); err != nil {
		return q, err
	}
	if q.s, err = c.pair(kernel+1, "stride", q.k, true); err != nil {
		return q, err
	}
	if q.p, err = c.pair(kernel+2, "padding", [2]int64{}, true); err != nil {
		return q, err
	}
	q.d = [2]int64{1, 1}
	if dil >= 0 {
		if q.d, err = c.pair(dil, "dilation", q.d, true); err != nil {
			return q, err
		}
	}
	q.ceil = c.Bool(ceil, false)
	r := in.Rank()
	if r != 3 && r != 4 {
		return q, Errorf("non-empty 3D or 4D (batch mode) tensor expected for input")
	}
	for i := 0; i < 2; i++ {
		if err := poolOutputCheck(q.k[i], q.s[i], q.p[i], q.d[i]); err != nil {
			return q, err
		}
	}
	for _, s := range in.Sizes[r-3:] {
		if s == 0 {
			return q, Errorf("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: %s", shapeString(in.Sizes))
		}
	}
	if err := poolDTypeCheck(in.DType, dil < 0, "avg_pool2d", "max_pool2d"); err != nil {
		return q, err
	}
	q.batched = r == 4
	q.n = 1
	if q.batched {
		q.n = in.Sizes[0]
	}
	q.ch = in.Sizes[r-3]
	q.in = [2]int64{in.Sizes[r-2], in.Sizes[r-1]}
	for i := 0; i < 2; i++ {
		if q.k[i] <= 0 {
			return q, Errorf("kernel size should be greater than zero, but got kH: %d kW: %d", q.k[0], q.k[1])
		}
		if q.s[i] <= 0 {
			return q, Errorf("stride should be greater than zero, but got dH: %d dW: %d", q.s[0], q.s[1])
		}
		if q.d[i] <= 0 {
			return q, Errorf("dilation should be greater than zero, but got dilationH: %d dilationW: %d", q.d[0], q.d[1])
		}
		if q.p[i] < 0 || q.p[i] > q.k[i]/2 {
			return q, Errorf("pad should be smaller than or equal to half of kernel size, but got padW = %d, padH = %d, kW = %d, kH = %d",
				q.p[1], q.p[0], q.k[1], q.k[0])
		}
		q.out[i] = poolOut(q.in[i], q.k[i], q.p[i], q.s[i], q.d[i], q.ceil)
	}
	if q.out[0] < 1 || q.out[1] < 1 {
		return q, Errorf("Given input size: (%dx%dx%d). Calculated output size: (%dx%dx%d). Output size is too small",
			q.ch, q.in[0], q.in[1], q.ch, q.out[0], q.out[1])
	}
	return q, nil
}

// poolOutputCheck makes the checks ATen's pooling_output_shape makes on one
// spatial dimension before any other shape check: a nonzero stride, and a
// padding between zero and half the dilated kernel.
func poolOutputCheck(k, s, p, d int64) error {
	if s == 0 {
		return Errorf("stride should not be zero")
	}
	if p < 0 {
		return Errorf("pad must be non-negative, but got pad: %d", p)
	}
	if p > ((k-1)*d+1)/2 {
		return Errorf("pad should be at most half of effective kernel size, but got pad=%d, kernel_size=%d and dilation=%d", p, k, d)
	}
	return nil
}

// poolDTypeCheck accepts the dtypes CPU pools: floats, int64 for the
// average pools (which divide with truncation) and every integer type but
// bool for the max pools; others fail as CPU's kernel dispatch does.
func poolDTypeCheck(d DType, avg bool, avgKernel, maxKernel string) error {
	switch {
	case d.IsFloat():
		return nil
	case avg && d != Int64:
		return notImplemented(avgKernel, d)
	case !avg && !d.IsIntegral(false):
		return notImplemented(maxKernel, d)
	}
	return nil
}

// window returns the reduce_window over [N, C, H, W]: the padding's high side
// grows so that ceil_mode's last partial windows exist.
func (q pool2d) window() hlo.Window {
	pad := [][2]int64{{0, 0}, {0, 0}}
	for i := 0; i < 2; i++ {
		dk := (q.k[i]-1)*q.d[i] + 1
		extra := max(0, (q.out[i]-1)*q.s[i]+dk-(q.in[i]+2*q.p[i]))
		pad = append(pad, [2]int64{q.p[i], q.p[i] + extra})
	}
	return hlo.Window{
		Dims: []int64{1, 1, q.k[0], q.k[1]}, Strides: []int64{1, 1, q.s[0], q.s[1]},
		WindowDilation: []int64{1, 1, q.d[0], q.d[1]}, Padding: pad,
	}
}

func (q pool2d) shape4(hw [2]int64) []int64 { return []int64{q.n, q.ch, hw[0], hw[1]} }

// shape returns hw as the caller's shape (without the batch when unbatched).
func (q pool2d) shape(hw [2]int64) []int64 {
	if q.batched {
		return q.shape4(hw)
	}
	return []int64{q.ch, hw[0], hw[1]}
}

// fit cuts a window result to the output size (ceil_mode may leave one more).
func (q pool2d) fit(b *hlo.Builder, v *hlo.Value) *hlo.Value {
	return b.Slice(v, []int64{0, 0, 0, 0}, q.shape4(q.out), []int64{1, 1, 1, 1})
}

// maxPool2d is max_pool2d_with_indices: the maximum of each window and its
// flat position within the input plane.
func maxPool2d(c *Ctx) ([]*hlo.Value, error) {
	in := c.Meta(0)
	q, err := c.poolArgs(in, 1, 4, 5)
	if err != nil {
		return nil, err
	}
	b := c.B
	x := b.Reshape(c.T(0), q.shape4(q.in)...)
	plane := b.Reshape(b.Iota(hlo.T(hlo.S64, q.in[0]*q.in[1]), 0), q.in[0], q.in[1])
	idx := b.BroadcastInDim(plane, q.shape4(q.in), []int64{2, 3})
	v, i := b.ReduceWindowArg(x, idx, hlo.GT, q.window())
	v, i = q.fit(b, v), q.fit(b, i)
	return []*hlo.Value{b.Reshape(v, q.shape(q.out)...), b.Reshape(i, q.shape(q.out)...)}, nil
}

// maxPool2dBackward adds each output gradient into the input position its
// index names, plane by plane.
func maxPool2dBackward(c *Ctx) ([]*hlo.Value, error) {
	gm, in, im := c.Meta(0), c.Meta(1), c.Meta(7)
	q, err := c.poolArgs(in, 2, 5, 6)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(gm.Sizes, q.shape(q.out)) || !slices.Equal(im.Sizes, gm.Sizes) {
		return nil, Errorf("Expected grad_output and indices of size %s, but got %s and %s",
			shapeString(q.shape(q.out)), shapeString(gm.Sizes), shapeString(im.Sizes))
	}
	if im.DType != Int64 {
		return nil, Errorf("expected indices to be of type Long, but got %s", cppName(im.DType))
	}
	b := c.B
	planes, hw, ohw := q.n*q.ch, q.in[0]*q.in[1], q.out[0]*q.out[1]
	g := b.Reshape(b.Convert(c.T(0), in.DType.Elem()), planes, ohw)
	flat := b.Reshape(c.T(7), planes, ohw, 1)
	plane := b.Iota(hlo.T(hlo.S64, planes, ohw, 1), 0)
	ind := b.Concatenate(2, plane, flat)
	zero := b.BroadcastTo(b.Scalar(in.DType.Elem(), 0), []int64{planes, hw})
	r := b.Scatter(zero, ind, g, nil, []int64{0, 1}, []int64{0, 1}, 2,
		func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value { return rb.Add(old, new) })
	return []*hlo.Value{b.Reshape(r, in.Sizes...)}, nil
}

// avgDivisor returns, per output position, what avg_pool2d divides each
// window's sum by, as a [1, 1, OH, OW] tensor of element type e.
func (q pool2d) avgDivisor(b *hlo.Builder, e hlo.Elem, includePad bool, override int64, hasOverride bool) *hlo.Value {
	if hasOverride {
		return b.Constant(hlo.T(e, 1, 1, q.out[0], q.out[1]), float64(override))
	}
	w := q.window()
	var ones *hlo.Value
	if includePad {
		// The padded input counts; ceil_mode's extra high padding does not.
		ones = b.Constant(hlo.T(e, 1, 1, q.in[0]+2*q.p[0], q.in[1]+2*q.p[1]), 1)
		for i := 0; i < 2; i++ {
			w.Padding[i+2] = [2]int64{0, w.Padding[i+2][1] - q.p[i]}
		}
	} else {
		ones = b.Constant(hlo.T(e, 1, 1, q.in[0], q.in[1]), 1)
	}
	cnt := b.ReduceWindow(ones, b.Scalar(e, 0), hlo.ReduceSum, w)
	return b.Slice(cnt, []int64{0, 0, 0, 0}, []int64{1, 1, q.out[0], q.out[1]}, []int64{1, 1, 1, 1})
}

// avgArgs reads avg_pool2d's arguments after self (or grad_output, self).
func (c *Ctx) avgArgs(in TensorMeta, kernel int) (q pool2d, includePad bool, override int64, hasOverride bool, err error) {
	if q, err = c.poolArgs(in, kernel, -1, kernel+3); err != nil {
		return
	}
	includePad = c.Bool(kernel+4, true)
	hasOverride = c.Has(kernel + 5)
	override = c.Int(kernel+5, 0)
	if hasOverride && override == 0 {
		err = Errorf("divisor must be not zero")
	}
	return
}

// avgPool2d is avg_pool2d: the sum of each window over its divisor.
func avgPool2d(c *Ctx) ([]*hlo.Value, error) {
	in := c.Meta(0)
	q, incl, ov, hasOv, err := c.avgArgs(in, 1)
	if err != nil {
		return nil, err
	}
	b := c.B
	acc := accumElem(in.DType)
	x := b.Convert(b.Reshape(c.T(0), q.shape4(q.in)...), acc)
	s := q.fit(b, b.ReduceWindow(x, b.Scalar(acc, 0), hlo.ReduceSum, q.window()))
	div := b.BroadcastTo(q.avgDivisor(b, acc, incl, ov, hasOv), s.T.Shape)
	y := b.Convert(b.Div(s, div), in.DType.Elem())
	return []*hlo.Value{b.Reshape(y, q.shape(q.out)...)}, nil
}

// avgPool2dBackward spreads each output gradient, over its divisor, across
// its window: the gradient dilated by the stride, summed over windows.
func avgPool2dBackward(c *Ctx) ([]*hlo.Value, error) {
	gm, in := c.Meta(0), c.Meta(1)
	q, incl, ov, hasOv, err := c.avgArgs(in, 2)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(gm.Sizes, q.shape(q.out)) {
		return nil, Errorf("Expected grad_output of size %s, but got %s", shapeString(q.shape(q.out)), shapeString(gm.Sizes))
	}
	b := c.B
	acc := accumElem(in.DType)
	g := b.Convert(b.Reshape(c.T(0), q.shape4(q.out)...), acc)
	g = b.Div(g, b.BroadcastTo(q.avgDivisor(b, acc, incl, ov, hasOv), g.T.Shape))
	lo, hi, interior := []int64{0, 0}, []int64{0, 0}, []int64{0, 0}
	for i := 0; i < 2; i++ {
		lo = append(lo, q.k[i]-1-q.p[i])
		hi = append(hi, q.in[i]+q.p[i]-(q.out[i]-1)*q.s[i]-1)
		interior = append(interior, q.s[i]-1)
	}
	gp := b.Pad(g, b.Scalar(acc, 0), lo, hi, interior)
	r := b.ReduceWindow(gp, b.Scalar(acc, 0), hlo.ReduceSum, hlo.Window{Dims: []int64{1, 1, q.k[0], q.k[1]}})
	return []*hlo.Value{b.Reshape(b.Convert(r, in.DType.Elem()), in.Sizes...)}, nil
}

func init() {
	def("aten::max_pool2d_with_indices", maxPool2d, "aten::max_pool2d_with_indices.out")
	def("aten::max_pool2d_with_indices_backward", maxPool2dBackward, "aten::max_pool2d_with_indices_backward.grad_input")
	def("aten::avg_pool2d", avgPool2d, "aten::avg_pool2d.out")
	def("aten::avg_pool2d_backward", avgPool2dBackward, "aten::avg_pool2d_backward.grad_input")
}
