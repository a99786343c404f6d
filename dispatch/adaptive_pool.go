package dispatch

import "torchtpu/hlo"

// adaptiveArgs checks _adaptive_avg_pool2d's input and returns it as
// [N, C, H, W] sizes, whether it has a batch, and the output size.
func adaptiveArgs(in TensorMeta, outSize []int64) (n, ch int64, hw, ohw [2]int64, batched bool, err error) {
	r := in.Rank()
	if len(outSize) != 2 {
		err = Errorf("adaptive_avg_pool2d: output_size must be 2")
		return
	}
	if r != 3 && r != 4 {
		err = Errorf("adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got %s", shapeString(in.Sizes))
		return
	}
	for i := 1; i < r; i++ {
		if in.Sizes[i] == 0 {
			err = Errorf("adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s with dimension %d being empty",
				shapeString(in.Sizes), i)
			return
		}
	}
	if outSize[0] < 0 || outSize[1] < 0 {
		err = Errorf("adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {%d, %d}", outSize[0], outSize[1])
		return
	}
	if !in.DType.IsFloat() {
		err = notImplemented("adaptive_avg_pool2d", in.DType)
		return
	}
	batched = r == 4
	n = 1
	if batched {
		n = in.Sizes[0]
	}
	ch = in.Sizes[r-3]
	hw = [2]int64{in.Sizes[r-2], in.Sizes[r-1]}
	ohw = [2]int64{outSize[0], outSize[1]}
	return
}

// adaptiveMatrix is the [out, in] matrix whose row i averages PyTorch's bin
// i: elements floor(i*in/out) <= h < ceil((i+1)*in/out).
func adaptiveMatrix(b *hlo.Builder, e hlo.Elem, in, out int64) *hlo.Value {
	t := hlo.T(hlo.S64, out, in)
	i, h := b.Iota(t, 0), b.Iota(t, 1)
	c := func(v int64) *hlo.Value { return b.ConstantInt(t, v) }
	start := b.Div(b.Mul(i, c(in)), c(out))
	end := b.Div(b.Add(b.Mul(b.Add(i, c(1)), c(in)), c(out-1)), c(out))
	inBin := b.And(b.Compare(hlo.GE, h, start), b.Compare(hlo.LT, h, end))
	w := b.Div(b.Constant(hlo.T(e, out, in), 1), b.Convert(b.Sub(end, start), e))
	return b.Select(inBin, w, b.Constant(hlo.T(e, out, in), 0))
}

// adaptiveAvgPool2d is _adaptive_avg_pool2d: equal windows through
// reduce_window when the sizes divide, bin-averaging matrices otherwise.
func adaptiveAvgPool2d(c *Ctx) ([]*hlo.Value, error) {
	in := c.Meta(0)
	n, ch, hw, ohw, batched, err := adaptiveArgs(in, c.Ints(1, nil))
	if err != nil {
		return nil, err
	}
	b := c.B
	acc := accumElem(in.DType)
	x := b.Convert(b.Reshape(c.T(0), n, ch, hw[0], hw[1]), acc)
	var y *hlo.Value
	switch {
	case ohw[0] == 0 || ohw[1] == 0:
		y = b.Constant(hlo.T(acc, n, ch, ohw[0], ohw[1]), 0)
	case hw[0]%ohw[0] == 0 && hw[1]%ohw[1] == 0:
		k := []int64{1, 1, hw[0] / ohw[0], hw[1] / ohw[1]}
		s := b.ReduceWindow(x, b.Scalar(acc, 0), hlo.ReduceSum, hlo.Window{Dims: k, Strides: k})
		y = b.Div(s, b.Constant(s.T, float64(k[2]*k[3])))
	default:
		ah, aw := adaptiveMatrix(b, acc, hw[0], ohw[0]), adaptiveMatrix(b, acc, hw[1], ohw[1])
		t := b.DotGeneral(x, aw, nil, nil, []int64{3}, []int64{1}) // [N, C, H, OW]
		t = b.DotGeneral(t, ah, nil, nil, []int64{2}, []int64{1})  // [N, C, OW, OH]
		y = b.Transpose(t, 0, 1, 3, 2)
	}
	out := []int64{ch, ohw[0], ohw[1]}
	if batched {
		out = append([]int64{n}, out...)
	}
	return []*hlo.Value{b.Reshape(b.Convert(y, in.DType.Elem()), out...)}, nil
}

// adaptiveAvgPool2dBackward spreads each output gradient evenly over its bin.
func adaptiveAvgPool2dBackward(c *Ctx) ([]*hlo.Value, error) {
	gm, in := c.Meta(0), c.Meta(1)
	r := gm.Rank()
	if r != in.Rank() || r < 3 {
		return nil, Errorf("adaptive_avg_pool2d_backward(): grad_output %s does not match input %s", gm, in)
	}
	n, ch, hw, ohw, _, err := adaptiveArgs(in, gm.Sizes[r-2:])
	if err != nil {
		return nil, err
	}
	b := c.B
	acc := accumElem(in.DType)
	g := b.Convert(b.Reshape(c.T(0), n, ch, ohw[0], ohw[1]), acc)
	var x *hlo.Value
	switch {
	case ohw[0] == 0 || ohw[1] == 0:
		x = b.Constant(hlo.T(acc, n, ch, hw[0], hw[1]), 0)
	case hw[0]%ohw[0] == 0 && hw[1]%ohw[1] == 0:
		kh, kw := hw[0]/ohw[0], hw[1]/ohw[1]
		g = b.Div(g, b.Constant(g.T, float64(kh*kw)))
		x = b.BroadcastInDim(g, []int64{n, ch, ohw[0], kh, ohw[1], kw}, []int64{0, 1, 2, 4})
		x = b.Reshape(x, n, ch, hw[0], hw[1])
	default:
		ah, aw := adaptiveMatrix(b, acc, hw[0], ohw[0]), adaptiveMatrix(b, acc, hw[1], ohw[1])
		t := b.DotGeneral(g, aw, nil, nil, []int64{3}, []int64{0}) // [N, C, OH, W]
		t = b.DotGeneral(t, ah, nil, nil, []int64{2}, []int64{0})  // [N, C, W, H]
		x = b.Transpose(t, 0, 1, 3, 2)
	}
	return []*hlo.Value{b.Reshape(b.Convert(x, in.DType.Elem()), in.Sizes...)}, nil
}

func init() {
	def("aten::_adaptive_avg_pool2d", adaptiveAvgPool2d, "aten::_adaptive_avg_pool2d.out")
	def("aten::_adaptive_avg_pool2d_backward", adaptiveAvgPool2dBackward, "aten::_adaptive_avg_pool2d_backward.out")
}
