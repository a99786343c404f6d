package dispatch

import (
	"slices"
	"strings"

	"torchtpu/hlo"
)

// sumOver sums x over dims in x's own element type.
func sumOver(b *hlo.Builder, x *hlo.Value, dims ...int64) *hlo.Value {
	return b.Reduce(x, b.Scalar(x.T.Elem, 0), hlo.ReduceSum, dims...)
}

// meanOver averages x over dims, keeping them as broadcast dimensions.
func meanOver(b *hlo.Builder, x *hlo.Value, dims ...int64) *hlo.Value {
	return b.BroadcastInDim(meanReduced(b, x, dims...), x.T.Shape, keptMapping(x.T.Rank(), dims))
}

// rangeDims returns the dims [from, to).
func rangeDims(from, to int) []int64 {
	var ds []int64
	for i := from; i < to; i++ {
		ds = append(ds, int64(i))
	}
	return ds
}

// normalizeGrad is the input gradient of a normalization whose statistics
// cover dims: rstd * (g - mean(g) - xhat * mean(g * xhat)). rstd is already
// broadcast to g's shape.
func normalizeGrad(b *hlo.Builder, g, xhat, rstd *hlo.Value, dims []int64) *hlo.Value {
	t := b.Sub(g, meanOver(b, g, dims...))
	t = b.Sub(t, b.Mul(xhat, meanOver(b, b.Mul(g, xhat), dims...)))
	return b.Mul(rstd, t)
}

// optional returns tensor argument i converted to e, or nil when absent.
func (c *Ctx) optional(i int, e hlo.Elem) *hlo.Value {
	if !c.IsTensor(i) {
		return nil
	}
	return c.B.Convert(c.T(i), e)
}

// maskedOut returns v converted to e when the output is wanted, and zeros of
// shape otherwise (the shim cannot return undefined tensors).
func maskedOut(b *hlo.Builder, want bool, v func() *hlo.Value, e hlo.Elem, shape []int64) *hlo.Value {
	if !want || v == nil {
		return b.BroadcastTo(b.Scalar(e, 0), shape)
	}
	return b.Convert(v(), e)
}

// mask reads the bool[k] output_mask argument i.
func (c *Ctx) mask(i, k int) []bool {
	out := make([]bool, k)
	for j := range out {
		out[j] = true
	}
	if c.Has(i) {
		for j, v := range c.Args[i].Ints {
			if j < k {
				out[j] = v != 0
			}
		}
	}
	return out
}

// layerNormAxis checks input meta m against normalized_shape ns and returns
// the first normalized dim.
func layerNormAxis(m TensorMeta, ns []int64) (int, error) {
	if len(ns) == 0 {
		return 0, Errorf("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []")
	}
	axis := m.Rank() - len(ns)
	if axis < 0 || !slices.Equal(m.Sizes[axis:], ns) {
		return 0, Errorf("Given normalized_shape=%s, expected input with shape [*, %s], but got input of size%s",
			shapeString(ns), strings.Trim(shapeString(ns), "[]"), shapeString(m.Sizes))
	}
	return axis, nil
}

// checkParam checks that the optional parameter i has shape ns.
func (c *Ctx) checkParam(i int, what string, ns []int64) error {
	if c.IsTensor(i) && !slices.Equal(c.Meta(i).Sizes, ns) {
		return Errorf("Expected %s to be of same shape as normalized_shape, but got %s of shape %s and normalized_shape = %s",
			what, what, shapeString(c.Meta(i).Sizes), shapeString(ns))
	}
	return nil
}

// statShape is the shape of layer norm's mean and rstd: the batch dims, then
// a 1 per normalized dim.
func statShape(sizes []int64, axis int) []int64 {
	s := append([]int64{}, sizes[:axis]...)
	for range sizes[axis:] {
		s = append(s, 1)
	}
	return s
}

// layerNorm is native_layer_norm(input, normalized_shape, weight, bias, eps)
// -> (out, mean, rstd); statistics are computed in float32 at least.
func layerNorm(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	ns := c.Ints(1, nil)
	if !m.DType.IsFloat() {
		return nil, notImplemented("LayerNormKernelImpl", m.DType)
	}
	axis, err := layerNormAxis(m, ns)
	if err != nil {
		return nil, err
	}
	if err := c.checkParam(2, "weight", ns); err != nil {
		return nil, err
	}
	if err := c.checkParam(3, "bias", ns); err != nil {
		return nil, err
	}
	b := c.B
	acc := accumElem(m.DType)
	x := b.Convert(c.T(0), acc)
	dims := rangeDims(axis, m.Rank())
	batch := rangeDims(0, axis)
	mean, rstd := moments(b, x, dims, c.Float(4, 1e-5))
	y := b.Mul(b.Sub(x, b.BroadcastInDim(mean, m.Sizes, batch)), b.BroadcastInDim(rstd, m.Sizes, batch))
	if w := c.optional(2, acc); w != nil {
		y = b.Mul(y, b.BroadcastTo(w, m.Sizes))
	}
	if bias := c.optional(3, acc); bias != nil {
		y = b.Add(y, b.BroadcastTo(bias, m.Sizes))
	}
	ss := statShape(m.Sizes, axis)
	e := m.DType.Elem()
	return []*hlo.Value{b.Convert(y, e), b.Convert(b.Reshape(mean, ss...), e), b.Convert(b.Reshape(rstd, ss...), e)}, nil
}

// moments returns the mean of x over dims and 1/sqrt(biased variance + eps),
// both reduced over dims.
func moments(b *hlo.Builder, x *hlo.Value, dims []int64, eps float64) (mean, rstd *hlo.Value) {
	mean = meanReduced(b, x, dims...)
	xc := b.Sub(x, b.BroadcastInDim(mean, x.T.Shape, keptMapping(x.T.Rank(), dims)))
	v := meanReduced(b, b.Mul(xc, xc), dims...)
	return mean, b.Rsqrt(b.Add(v, splat(b, v, eps)))
}

// meanReduced averages x over dims, dropping them.
func meanReduced(b *hlo.Builder, x *hlo.Value, dims ...int64) *hlo.Value {
	n := int64(1)
	for _, d := range dims {
		n *= x.T.Shape[d]
	}
	s := sumOver(b, x, dims...)
	return b.Div(s, splat(b, s, float64(n)))
}

// layerNormBackward is native_layer_norm_backward(grad_out, input,
// normalized_shape, mean, rstd, weight, bias, output_mask).
func layerNormBackward(c *Ctx) ([]*hlo.Value, error) {
	gm, m := c.Meta(0), c.Meta(1)
	ns := c.Ints(2, nil)
	axis, err := layerNormAxis(m, ns)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(gm.Sizes, m.Sizes) {
		return nil, Errorf("Expected grad_out to have the input's shape %s, but got %s", shapeString(m.Sizes), shapeString(gm.Sizes))
	}
	mask := c.mask(7, 3)
	b := c.B
	acc := accumElem(m.DType)
	batch := m.Sizes[:axis]
	stat := func(i int) *hlo.Value {
		return b.BroadcastInDim(b.Reshape(b.Convert(c.T(i), acc), batch...), m.Sizes, rangeDims(0, axis))
	}
	x, g := b.Convert(c.T(1), acc), b.Convert(c.T(0), acc)
	rstd := stat(4)
	xhat := b.Mul(b.Sub(x, stat(3)), rstd)
	gw := g
	if w := c.optional(5, acc); w != nil {
		gw = b.Mul(g, b.BroadcastTo(w, m.Sizes))
	}
	pd := m.DType.Elem()
	if c.IsTensor(5) {
		pd = c.Meta(5).DType.Elem()
	}
	bdims := rangeDims(0, axis)
	dx := maskedOut(b, mask[0], func() *hlo.Value { return normalizeGrad(b, gw, xhat, rstd, rangeDims(axis, m.Rank())) }, m.DType.Elem(), m.Sizes)
	dw := maskedOut(b, mask[1], func() *hlo.Value { return sumOver(b, b.Mul(g, xhat), bdims...) }, pd, ns)
	db := maskedOut(b, mask[2], func() *hlo.Value { return sumOver(b, g, bdims...) }, pd, ns)
	return []*hlo.Value{dx, dw, db}, nil
}

// groupShape reads native_group_norm's N, C, HxW and group arguments (from
// index i) and checks them against the input.
func groupShape(c *Ctx, m TensorMeta, i int) (n, ch, hw, g int64, err error) {
	n, ch, hw, g = c.Int(i, 0), c.Int(i+1, 0), c.Int(i+2, 0), c.Int(i+3, 1)
	if g <= 0 || ch%g != 0 {
		return 0, 0, 0, 0, Errorf("Expected number of channels in input to be divisible by num_groups, but got input of shape %s and num_groups=%d",
			shapeString(m.Sizes), g)
	}
	if m.Numel() != n*ch*hw {
		return 0, 0, 0, 0, Errorf("Expected the input of shape %s to hold N * C * HxW = %d * %d * %d elements", shapeString(m.Sizes), n, ch, hw)
	}
	return n, ch, hw, g, nil
}

// checkChannels checks that optional parameter i holds one value per channel.
func (c *Ctx) checkChannels(i int, what string, ch int64) error {
	if c.IsTensor(i) && (c.Meta(i).Rank() != 1 || c.Meta(i).Numel() != ch) {
		return Errorf("Expected %s to be a vector of size equal to the number of channels in input, but got %s of shape %s and input of shape [*, %d, *]",
			what, what, shapeString(c.Meta(i).Sizes), ch)
	}
	return nil
}

// groupNorm is native_group_norm(input, weight, bias, N, C, HxW, group, eps)
// -> (out, mean [N, group], rstd [N, group]).
func groupNorm(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if !m.DType.IsFloat() {
		return nil, notImplemented("GroupNormKernelImpl", m.DType)
	}
	n, ch, hw, g, err := groupShape(c, m, 3)
	if err != nil {
		return nil, err
	}
	if err := c.checkChannels(1, "weight", ch); err != nil {
		return nil, err
	}
	if err := c.checkChannels(2, "bias", ch); err != nil {
		return nil, err
	}
	b := c.B
	acc := accumElem(m.DType)
	x := b.Reshape(b.Convert(c.T(0), acc), n, g, ch/g*hw)
	mean, rstd := moments(b, x, []int64{2}, c.Float(7, 1e-5))
	grp := x.T.Shape
	y := b.Mul(b.Sub(x, b.BroadcastInDim(mean, grp, []int64{0, 1})), b.BroadcastInDim(rstd, grp, []int64{0, 1}))
	y = b.Reshape(y, n, ch, hw)
	chan3 := []int64{n, ch, hw}
	if w := c.optional(1, acc); w != nil {
		y = b.Mul(y, b.BroadcastInDim(w, chan3, []int64{1}))
	}
	if bias := c.optional(2, acc); bias != nil {
		y = b.Add(y, b.BroadcastInDim(bias, chan3, []int64{1}))
	}
	e := m.DType.Elem()
	return []*hlo.Value{b.Convert(b.Reshape(y, m.Sizes...), e), b.Convert(mean, e), b.Convert(rstd, e)}, nil
}

// groupNormBackward is native_group_norm_backward(grad_out, input, mean,
// rstd, weight, N, C, HxW, group, output_mask).
func groupNormBackward(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(1)
	if !slices.Equal(c.Meta(0).Sizes, m.Sizes) {
		return nil, Errorf("Expected grad_out to have the input's shape %s, but got %s", shapeString(m.Sizes), shapeString(c.Meta(0).Sizes))
	}
	n, ch, hw, g, err := groupShape(c, m, 5)
	if err != nil {
		return nil, err
	}
	mask := c.mask(9, 3)
	b := c.B
	acc := accumElem(m.DType)
	d := ch / g * hw
	grp := []int64{n, g, d}
	chan3 := []int64{n, ch, hw}
	stat := func(i int) *hlo.Value {
		return b.BroadcastInDim(b.Reshape(b.Convert(c.T(i), acc), n, g), grp, []int64{0, 1})
	}
	x := b.Reshape(b.Convert(c.T(1), acc), grp...)
	gc := b.Reshape(b.Convert(c.T(0), acc), chan3...)
	rstd := stat(3)
	xhat := b.Mul(b.Sub(x, stat(2)), rstd)
	gw := gc
	if w := c.optional(4, acc); w != nil {
		gw = b.Mul(gc, b.BroadcastInDim(w, chan3, []int64{1}))
	}
	pd := m.DType.Elem()
	if c.IsTensor(4) {
		pd = c.Meta(4).DType.Elem()
	}
	dx := maskedOut(b, mask[0], func() *hlo.Value {
		r := normalizeGrad(b, b.Reshape(gw, grp...), xhat, rstd, []int64{2})
		return b.Reshape(r, m.Sizes...)
	}, m.DType.Elem(), m.Sizes)
	dw := maskedOut(b, mask[1], func() *hlo.Value {
		return sumOver(b, b.Mul(gc, b.Reshape(xhat, chan3...)), 0, 2)
	}, pd, []int64{ch})
	db := maskedOut(b, mask[2], func() *hlo.Value { return sumOver(b, gc, 0, 2) }, pd, []int64{ch})
	return []*hlo.Value{dx, dw, db}, nil
}

func init() {
	def("aten::native_layer_norm", layerNorm)
	def("aten::native_layer_norm_backward", layerNormBackward)
	def("aten::native_group_norm", groupNorm)
	def("aten::native_group_norm_backward", groupNormBackward)
}
