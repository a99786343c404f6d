package dispatch

import (
	"fmt"
	"slices"
	"strings"

	"torchtpu/hlo"
)

// poolWindow holds the window of a max or average pooling over n spatial
// dimensions and its sizes: lead are the input's leading (batch, channel)
// sizes, in and out the spatial ones. Every lowering pools the input viewed
// as [planes, spatial...], planes being the product of the leading sizes.
type poolWindow struct {
	k, s, p, d, in, out []int64
	lead                []int64
	ceil                bool
}

// poolKernels are the names CPU's kernels carry in their errors for a
// pooling over n spatial dimensions: the max pooling's and the average's.
func poolKernels(n int) (maxName, avgName string) {
	if n == 2 {
		return "max_pool2d", "avg_pool2d"
	}
	return fmt.Sprintf("max_pool%dd", n), fmt.Sprintf("avg_pool%dd_out_frame", n)
}

// spatialArg reads int-list argument i as n values (one value repeats), or
// def when empty and def is not nil; op names the pooling in the error.
func (c *Ctx) spatialArg(i, n int, op, name string, def []int64) ([]int64, error) {
	xs := c.Ints(i, nil)
	switch {
	case len(xs) == 0 && def != nil:
		return def, nil
	case len(xs) == 1:
		r := make([]int64, n)
		for j := range r {
			r[j] = xs[0]
		}
		return r, nil
	case len(xs) == n:
		return xs, nil
	}
	count := map[int]string{1: "one", 2: "two", 3: "three"}[n]
	return nil, Errorf("%s: %s must either be a single int, or a tuple of %s ints", op, name, count)
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

// divFloor is a / b rounded towards negative infinity.
func divFloor(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// namedDims writes values as PyTorch's pooling errors do: "kT: 1 kH: 2 kW: 3"
// for prefix "k" over three dimensions, the last two named H and W.
func namedDims(prefix string, values []int64) string {
	letters := []string{"T", "H", "W"}[3-len(values):]
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprintf("%s%s: %d", prefix, letters[i], v)
	}
	return strings.Join(parts, " ")
}

// poolArgs reads the window of a pooling over n spatial dimensions from
// arguments kernel, kernel+1 (stride), kernel+2 (padding), dil (dilation; none
// when dil < 0, which marks the average pooling) and ceil (ceil_mode), for
// input in, and checks them and the input as PyTorch does.
func (c *Ctx) poolArgs(in TensorMeta, n, kernel, dil, ceil int) (poolWindow, error) {
	var q poolWindow
	var err error
	maxName, avgName := poolKernels(n)
	op := maxName
	if dil < 0 {
		op = fmt.Sprintf("avg_pool%dd", n)
	}
	zeros := make([]int64, n)
	if q.k, err = c.spatialArg(kernel, n, op, "kernel_size", nil); err != nil {
		return q, err
	}
	if q.s, err = c.spatialArg(kernel+1, n, op, "stride", q.k); err != nil {
		return q, err
	}
	if q.p, err = c.spatialArg(kernel+2, n, op, "padding", zeros); err != nil {
		return q, err
	}
	q.d = onesN(n)
	if dil >= 0 {
		if q.d, err = c.spatialArg(dil, n, op, "dilation", q.d); err != nil {
			return q, err
		}
	}
	q.ceil = c.Bool(ceil, false)
	r := in.Rank()
	if r != n+1 && r != n+2 {
		return q, Errorf("non-empty %dD or %dD (batch mode) tensor expected for input", n+1, n+2)
	}
	for i := 0; i < n; i++ {
		if err := poolOutputCheck(q.k[i], q.s[i], q.p[i], q.d[i]); err != nil {
			return q, err
		}
	}
	for i, s := range in.Sizes[r-n-1:] {
		if s == 0 && dil >= 0 && n == 3 {
			return q, Errorf("max_pool3d_with_indices_out_cpu_template(): Expected input to have non-zero size for "+
				"non-batch dimensions, but input has sizes %s with dimension %d being empty", shapeString(in.Sizes), r-n-1+i)
		}
		if s == 0 {
			return q, Errorf("Expected %dD or %dD (batch mode) tensor with optional 0 dim batch size for input, but got: %s",
				n+1, n+2, shapeString(in.Sizes))
		}
	}
	if err := poolDTypeCheck(in.DType, dil < 0, avgName, maxName); err != nil {
		return q, err
	}
	q.lead = in.Sizes[:r-n]
	q.in = in.Sizes[r-n:]
	q.out = make([]int64, n)
	for i := 0; i < n; i++ {
		switch {
		case q.k[i] <= 0:
			return q, Errorf("kernel size should be greater than zero, but got %s", namedDims("k", q.k))
		case q.s[i] <= 0:
			return q, Errorf("stride should be greater than zero, but got %s", namedDims("d", q.s))
		case q.d[i] <= 0:
			return q, Errorf("dilation should be greater than zero, but got %s", namedDims("dilation", q.d))
		case q.p[i] < 0 || q.p[i] > ((q.k[i]-1)*q.d[i]+1)/2:
			return q, Errorf("pad should be at most half of effective kernel size, but got pad=%d, kernel_size=%d and dilation=%d",
				q.p[i], q.k[i], q.d[i])
		}
		q.out[i] = poolOut(q.in[i], q.k[i], q.p[i], q.s[i], q.d[i], q.ceil)
	}
	if slices.Min(q.out) < 1 {
		ch := q.lead[len(q.lead)-1]
		return q, Errorf("Given input size: (%s). Calculated output size: (%s). Output size is too small",
			joinSizes(ch, q.in), joinSizes(ch, q.out))
	}
	return q, nil
}

// joinSizes writes ch and sp as "CxHxW".
func joinSizes(ch int64, sp []int64) string {
	parts := []string{fmt.Sprint(ch)}
	for _, s := range sp {
		parts = append(parts, fmt.Sprint(s))
	}
	return strings.Join(parts, "x")
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

// planes returns the number of pooled planes (product of the leading sizes).
func (q poolWindow) planes() int64 { return numel(q.lead) }

// shape returns the caller's shape for spatial sizes sp.
func (q poolWindow) shape(sp []int64) []int64 { return append(append([]int64{}, q.lead...), sp...) }

// flat returns [planes, sp...].
func (q poolWindow) flat(sp []int64) []int64 { return append([]int64{q.planes()}, sp...) }

// window returns the reduce_window over [planes, spatial...]; the high
// padding grows so that ceil_mode's last partial windows exist.
func (q poolWindow) window() hlo.Window {
	w := hlo.Window{Dims: []int64{1}, Strides: []int64{1}, WindowDilation: []int64{1}, Padding: [][2]int64{{0, 0}}}
	for i := range q.k {
		dk := (q.k[i]-1)*q.d[i] + 1
		extra := max(0, (q.out[i]-1)*q.s[i]+dk-(q.in[i]+2*q.p[i]))
		w.Dims = append(w.Dims, q.k[i])
		w.Strides = append(w.Strides, q.s[i])
		w.WindowDilation = append(w.WindowDilation, q.d[i])
		w.Padding = append(w.Padding, [2]int64{q.p[i], q.p[i] + extra})
	}
	return w
}

// fit cuts a window result to [planes, out...] (ceil_mode may leave one more).
func (q poolWindow) fit(b *hlo.Builder, v *hlo.Value) *hlo.Value {
	sh := q.flat(q.out)
	return b.Slice(v, make([]int64, len(sh)), sh, onesN(len(sh)))
}

// onesN returns n ones.
func onesN(n int) []int64 {
	r := make([]int64, n)
	for i := range r {
		r[i] = 1
	}
	return r
}

// planeIota returns the flat position of every element of a plane of sizes
// sp, broadcast over planes.
func planeIota(b *hlo.Builder, planes int64, sp []int64) *hlo.Value {
	flat := b.Reshape(b.Iota(hlo.T(hlo.S64, numel(sp)), 0), sp...)
	return b.BroadcastInDim(flat, append([]int64{planes}, sp...), iotaDims(len(sp) + 1)[1:])
}

// maxPool returns max_pool{2,3}d_with_indices: the maximum of each window
// and its flat position within the input plane.
func maxPool(n int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		q, err := c.poolArgs(c.Meta(0), n, 1, 4, 5)
		if err != nil {
			return nil, err
		}
		b := c.B
		x := b.Reshape(c.T(0), q.flat(q.in)...)
		v, i := b.ReduceWindowArg(x, planeIota(b, q.planes(), q.in), hlo.GT, q.window())
		if in := numel(q.in); in > 0 {
			c.KnowRange(1, 0, in-1) // flat positions in the input plane: max_unpool's check needs no read
		}
		return []*hlo.Value{b.Reshape(q.fit(b, v), q.shape(q.out)...), b.Reshape(q.fit(b, i), q.shape(q.out)...)}, nil
	}
}

// scatterPlanes adds each gradient of g into the flat plane position its
// index names: the backward of the max poolings.
func scatterPlanes(b *hlo.Builder, g, idx *hlo.Value, e hlo.Elem, planes, outPlane, inPlane int64) *hlo.Value {
	gv := b.Reshape(b.Convert(g, e), planes, outPlane)
	flat := b.Reshape(idx, planes, outPlane, 1)
	plane := b.Iota(hlo.T(hlo.S64, planes, outPlane, 1), 0)
	ind := b.Concatenate(2, plane, flat)
	zero := b.BroadcastTo(b.Scalar(e, 0), []int64{planes, inPlane})
	return b.Scatter(zero, ind, gv, nil, []int64{0, 1}, []int64{0, 1}, 2,
		func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value { return rb.Add(old, new) })
}

// maxPoolBackward returns max_pool{2,3}d_with_indices_backward: each output
// gradient added into the input position its index names.
func maxPoolBackward(n int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		gm, in, im := c.Meta(0), c.Meta(1), c.Meta(7)
		q, err := c.poolArgs(in, n, 2, 5, 6)
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
		r := scatterPlanes(c.B, c.T(0), c.T(7), in.DType.Elem(), q.planes(), numel(q.out), numel(q.in))
		return []*hlo.Value{c.B.Reshape(r, in.Sizes...)}, nil
	}
}

// avgDivisor returns what an average pooling divides each window's sum by,
// as a [1, out...] tensor of element type e.
func (q poolWindow) avgDivisor(b *hlo.Builder, e hlo.Elem, includePad bool, override int64, hasOverride bool) *hlo.Value {
	sh := append([]int64{1}, q.out...)
	if hasOverride {
		return b.Constant(hlo.T(e, sh...), float64(override))
	}
	w := q.window()
	var ones *hlo.Value
	if includePad {
		// The padded input counts; ceil_mode's extra high padding does not.
		psh := []int64{1}
		for i := range q.in {
			psh = append(psh, q.in[i]+2*q.p[i])
			w.Padding[i+1] = [2]int64{0, w.Padding[i+1][1] - q.p[i]}
		}
		ones = b.Constant(hlo.T(e, psh...), 1)
	} else {
		ones = b.Constant(hlo.T(e, append([]int64{1}, q.in...)...), 1)
	}
	cnt := b.ReduceWindow(ones, b.Scalar(e, 0), hlo.ReduceSum, w)
	return b.Slice(cnt, make([]int64, len(sh)), sh, onesN(len(sh)))
}

// avgArgs reads an average pooling's arguments after self (or grad_output,
// self): the window, count_include_pad and divisor_override.
func (c *Ctx) avgArgs(in TensorMeta, n, kernel int) (q poolWindow, includePad bool, override int64, hasOverride bool, err error) {
	if q, err = c.poolArgs(in, n, kernel, -1, kernel+3); err != nil {
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

// avgPool returns avg_pool{2,3}d: the sum of each window over its divisor.
func avgPool(n int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		in := c.Meta(0)
		q, incl, ov, hasOv, err := c.avgArgs(in, n, 1)
		if err != nil {
			return nil, err
		}
		b := c.B
		acc := accumElem(in.DType)
		x := b.Convert(b.Reshape(c.T(0), q.flat(q.in)...), acc)
		s := q.fit(b, b.ReduceWindow(x, b.Scalar(acc, 0), hlo.ReduceSum, q.window()))
		div := b.BroadcastTo(q.avgDivisor(b, acc, incl, ov, hasOv), s.T.Shape)
		y := b.Convert(b.Div(s, div), in.DType.Elem())
		return []*hlo.Value{b.Reshape(y, q.shape(q.out)...)}, nil
	}
}

// avgPoolBackward returns avg_pool{2,3}d_backward: each output gradient, over
// its divisor, spread across its window (the gradient dilated by the stride,
// summed over windows).
func avgPoolBackward(n int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		gm, in := c.Meta(0), c.Meta(1)
		q, incl, ov, hasOv, err := c.avgArgs(in, n, 2)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(gm.Sizes, q.shape(q.out)) {
			return nil, Errorf("Expected grad_output of size %s, but got %s", shapeString(q.shape(q.out)), shapeString(gm.Sizes))
		}
		b := c.B
		acc := accumElem(in.DType)
		g := b.Convert(b.Reshape(c.T(0), q.flat(q.out)...), acc)
		g = b.Div(g, b.BroadcastTo(q.avgDivisor(b, acc, incl, ov, hasOv), g.T.Shape))
		lo, hi, interior := []int64{0}, []int64{0}, []int64{0}
		dims := []int64{1}
		for i := range q.k {
			lo = append(lo, q.k[i]-1-q.p[i])
			// A negative high padding (ceil_mode windows past the end) crops below.
			hi = append(hi, max(q.in[i]+q.p[i]-(q.out[i]-1)*q.s[i]-1, 0))
			interior = append(interior, q.s[i]-1)
			dims = append(dims, q.k[i])
		}
		gp := b.Pad(g, b.Scalar(acc, 0), lo, hi, interior)
		r := b.ReduceWindow(gp, b.Scalar(acc, 0), hlo.ReduceSum, hlo.Window{Dims: dims})
		r = b.Slice(r, make([]int64, len(dims)), q.flat(q.in), onesN(len(dims)))
		return []*hlo.Value{b.Reshape(b.Convert(r, in.DType.Elem()), in.Sizes...)}, nil
	}
}

// maxUnpool places each input value at the flat position its index names
// within an output plane of the given spatial size; the rest are zero.
func maxUnpool(spatial int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		in, im := c.Meta(0), c.Meta(1)
		out := c.Ints(2, nil)
		if len(out) != spatial {
			return nil, Errorf("There should be exactly %d elements (depth, height, width) in output_size, but got %d elements.", spatial, len(out))
		}
		r := in.Rank()
		if r != spatial+1 && r != spatial+2 {
			return nil, Errorf("Input to max_unpooling%dd should be a %dd or %dd Tensor, but got a tensor with %d dimensions.",
				spatial, spatial+1, spatial+2, r)
		}
		if im.DType != Int64 {
			return nil, Errorf("elements in indices should be type int64 but got: %s", scalarTypeName(im.DType))
		}
		if !slices.Equal(in.Sizes, im.Sizes) {
			return nil, Errorf("Expected shape of indices to be same as that of the input tensor (%s) but got indices tensor with shape: %s",
				shapeString(in.Sizes), shapeString(im.Sizes))
		}
		for _, s := range in.Sizes[1:] {
			if s == 0 {
				return nil, Errorf("max_unpooling%dd(): Expected input to have non-zero size for non-batch dimensions, but got %s",
					spatial, shapeString(in.Sizes))
			}
		}
		if spatial == 3 && c.Has(3) {
			// max_unpool3d's stride and padding shape nothing here, but CPU checks the stride.
			if st := c.Ints(3, nil); slices.ContainsFunc(st, func(s int64) bool { return s <= 0 }) {
				return nil, Errorf("strides should be greater than zero, but got stride: %s", shapeString(st))
			}
		}
		planes := numel(in.Sizes[:r-spatial])
		inPlane := numel(in.Sizes[r-spatial:])
		outPlane := numel(out)
		if err := c.checkIndices(1, outPlane, func(v int64) error {
			return Errorf("Found an invalid max index: %d (output volumes are of size %s)", v, strings.ReplaceAll(strings.Trim(fmt.Sprint(out), "[]"), " ", "x"))
		}); err != nil {
			return nil, err // CPU refuses an index past the output plane; the scatter would drop it
		}
		b := c.B
		x := b.Reshape(c.T(0), planes, inPlane)
		flat := b.Reshape(c.T(1), planes, inPlane, 1)
		plane := b.Iota(hlo.T(hlo.S64, planes, inPlane, 1), 0)
		ind := b.Concatenate(2, plane, flat)
		zero := b.BroadcastTo(b.Scalar(in.DType.Elem(), 0), []int64{planes, outPlane})
		y := b.Scatter(zero, ind, x, nil, []int64{0, 1}, []int64{0, 1}, 2,
			func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value { return new })
		shape := append(append([]int64{}, in.Sizes[:r-spatial]...), out...)
		return []*hlo.Value{b.Reshape(y, shape...)}, nil
	}
}

func init() {
	def("aten::max_pool2d_with_indices", maxPool(2), "aten::max_pool2d_with_indices.out")
	def("aten::max_pool3d_with_indices", maxPool(3), "aten::max_pool3d_with_indices.out")
	def("aten::max_pool2d_with_indices_backward", maxPoolBackward(2), "aten::max_pool2d_with_indices_backward.grad_input")
	def("aten::max_pool3d_with_indices_backward", maxPoolBackward(3), "aten::max_pool3d_with_indices_backward.grad_input")
	def("aten::avg_pool2d", avgPool(2), "aten::avg_pool2d.out")
	def("aten::avg_pool3d", avgPool(3), "aten::avg_pool3d.out")
	def("aten::avg_pool2d_backward", avgPoolBackward(2), "aten::avg_pool2d_backward.grad_input")
	def("aten::avg_pool3d_backward", avgPoolBackward(3), "aten::avg_pool3d_backward.grad_input")
	def("aten::max_unpool2d", maxUnpool(2), "aten::max_unpool2d.out").Needs = hostArgs(1)
	def("aten::max_unpool3d", maxUnpool(3), "aten::max_unpool3d.out").Needs = hostArgs(1)
}
