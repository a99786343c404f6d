package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// weightNormShape checks _weight_norm_interface's v and g (argument gi) and
// returns the wrapped dim, the dims the norm sums over and the shape of g
// and the norms: v's size at dim, ones elsewhere.
func weightNormShape(c *Ctx, gi, di int) (int64, []int64, []int64, error) {
	v := c.Meta(0)
	dim, err := wrapDim(c.Int(di, 0), v.Rank())
	if err != nil {
		return 0, nil, nil, err
	}
	if dim != 0 && dim != int64(v.Rank()-1) {
		return 0, nil, nil, Errorf("fused kernels can only be applied for first or last dim, but got dim %d of a %d-D tensor", dim, v.Rank())
	}
	keep := make([]int64, v.Rank())
	var over []int64
	for i := range keep {
		keep[i] = 1
		if int64(i) == dim {
			keep[i] = v.Sizes[i]
		} else {
			over = append(over, int64(i))
		}
	}
	if g := c.Meta(gi); g.Numel() != numel(keep) {
		return 0, nil, nil, Errorf("Expected g of %d elements (v's size at dim %d), but got g of shape %s", numel(keep), dim, shapeString(g.Sizes))
	}
	return dim, over, keep, nil
}

// weightNormInterface is _weight_norm_interface(v, g, dim) -> (w, norms):
// w = v * g / ||v||, the norm taken over every dim but dim; the norms are in
// float32 at least, as CPU keeps them.
func weightNormInterface(c *Ctx) ([]*hlo.Value, error) {
	v := c.Meta(0)
	if !v.DType.IsFloat() {
		return nil, notImplemented("weight_norm", v.DType)
	}
	dim, over, keep, err := weightNormShape(c, 1, 2)
	if err != nil {
		return nil, err
	}
	b := c.B
	acc := accumElem(v.DType)
	x := b.Convert(c.T(0), acc)
	norms := b.Reshape(b.Sqrt(sumOver(b, b.Mul(x, x), over...)), keep...)
	g := b.Reshape(b.Convert(c.T(1), acc), keep...)
	scale := b.BroadcastInDim(b.Reshape(b.Div(g, norms), keep[dim]), v.Sizes, []int64{dim})
	w := b.Convert(b.Mul(x, scale), v.DType.Elem())
	return []*hlo.Value{w, b.Convert(norms, accumNormDType(v.DType).Elem())}, nil
}

// accumNormDType is the dtype of weight norm's saved norms: float32 for half types.
func accumNormDType(d DType) DType {
	if d == Float16 || d == BFloat16 {
		return Float32
	}
	return d
}

// weightNormInterfaceBackward is _weight_norm_interface_backward(grad_w,
// saved_v, saved_g, saved_norms, dim) -> (grad_v, grad_g). Per slice, with
// a = sum(grad_w * v): grad_g = a / norm and
// grad_v = g / norm * (grad_w - v * a / norm²).
func weightNormInterfaceBackward(c *Ctx) ([]*hlo.Value, error) {
	gm, v := c.Meta(0), c.Meta(1)
	if !slices.Equal(gm.Sizes, v.Sizes) {
		return nil, Errorf("Expected grad_w of v's shape %s, but got %s", shapeString(v.Sizes), shapeString(gm.Sizes))
	}
	// Shape checks read v as argument 0; do them on a view of the arguments.
	sub := &Ctx{Op: c.Op, B: c.B, Args: []Arg{c.Args[1], c.Args[2], c.Args[4]}, R: c.R}
	dim, over, keep, err := weightNormShape(sub, 1, 2)
	if err != nil {
		return nil, err
	}
	if c.Meta(3).Numel() != numel(keep) {
		return nil, Errorf("Expected saved_norms of %d elements, but got shape %s", numel(keep), shapeString(c.Meta(3).Sizes))
	}
	b := c.B
	acc := accumElem(v.DType)
	n := keep[dim]
	along := func(x *hlo.Value) *hlo.Value { return b.BroadcastInDim(b.Reshape(x, n), v.Sizes, []int64{dim}) }
	gw, x := b.Convert(c.T(0), acc), b.Convert(c.T(1), acc)
	g := b.Reshape(b.Convert(c.T(2), acc), n)
	norm := b.Reshape(b.Convert(c.T(3), acc), n)
	a := b.Reshape(sumOver(b, b.Mul(gw, x), over...), n)
	gradG := b.Div(a, norm)
	coef := b.Div(a, b.Mul(norm, norm))
	gradV := b.Mul(along(b.Div(g, norm)), b.Sub(gw, b.Mul(x, along(coef))))
	return []*hlo.Value{b.Convert(gradV, v.DType.Elem()), b.Convert(b.Reshape(gradG, c.Meta(2).Sizes...), c.Meta(2).DType.Elem())}, nil
}

func init() {
	def("aten::_weight_norm_interface", weightNormInterface, "")
	def("aten::_weight_norm_interface_backward", weightNormInterfaceBackward, "")
}
