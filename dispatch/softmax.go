package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// softmaxDim wraps the dim argument of a softmax over a tensor of meta m; it
// returns -1 for a zero-dimensional tensor (nothing to reduce).
func softmaxDim(c *Ctx, i int, m TensorMeta) (int64, error) {
	d, err := wrapDim(c.Int(i, 0), m.Rank())
	if err != nil {
		return 0, err
	}
	if m.Rank() == 0 {
		return -1, nil
	}
	return d, nil
}

// reduceKeep reduces x over dim and broadcasts the result back to x's shape.
func reduceKeep(b *hlo.Builder, x *hlo.Value, dim int64, isMax bool) *hlo.Value {
	var r *hlo.Value
	if isMax {
		r = b.Reduce(x, b.Scalar(x.T.Elem, hlo.Lowest(x.T.Elem)), hlo.ReduceMax, dim)
	} else {
		r = b.Reduce(x, b.Scalar(x.T.Elem, 0), hlo.ReduceSum, dim)
	}
	return b.BroadcastInDim(r, x.T.Shape, keptMapping(x.T.Rank(), []int64{dim}))
}

// softmaxRule is _softmax/_log_softmax(self, dim, half_to_float). The max
// along dim is subtracted first; half precision computes in float32.
func softmaxRule(log bool) Fn {
	kernel := "softmax_lastdim_kernel_impl"
	if log {
		kernel = "log_softmax_lastdim_kernel_impl"
	}
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		if !m.DType.IsFloat() {
			return nil, notImplemented(kernel, m.DType)
		}
		out := m.DType
		if c.Bool(2, false) {
			if m.DType != Float16 && m.DType != BFloat16 {
				return nil, Errorf("conversion is supported for Half type only")
			}
			out = Float32
		}
		dim, err := softmaxDim(c, 1, m)
		if err != nil {
			return nil, err
		}
		b := c.B
		x := b.Convert(c.T(0), accumElem(m.DType))
		if dim < 0 { // a single element
			if log {
				return []*hlo.Value{b.Convert(b.Sub(x, x), out.Elem())}, nil
			}
			return []*hlo.Value{b.Convert(b.Exp(b.Sub(x, x)), out.Elem())}, nil
		}
		shifted := b.Sub(x, reduceKeep(b, x, dim, true))
		e := b.Exp(shifted)
		s := reduceKeep(b, e, dim, false)
		var r *hlo.Value
		if log {
			r = b.Sub(shifted, b.Log(s))
		} else {
			r = b.Div(e, s)
		}
		return []*hlo.Value{b.Convert(r, out.Elem())}, nil
	}
}

// softmaxBackward is _softmax_backward_data / _log_softmax_backward_data
// (grad_output, output, dim, input_dtype).
func softmaxBackward(log bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		g, o := c.Meta(0), c.Meta(1)
		in, err := c.DTypeArg(3, g.DType)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(g.Sizes, o.Sizes) {
			return nil, Errorf("Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 'output'; but %s does not equal %s (while checking arguments for softmax_backward)",
				shapeString(g.Sizes), shapeString(o.Sizes))
		}
		if g.DType != o.DType {
			return nil, Errorf("expected scalar type %s but found %s", scalarTypeName(g.DType), scalarTypeName(o.DType))
		}
		if !g.DType.IsFloat() {
			return nil, notImplemented("softmax_backward_data", g.DType)
		}
		halfToFloat := g.DType == Float32 && (in == Float16 || in == BFloat16)
		if in != g.DType && !halfToFloat {
			return nil, Errorf("expected scalar type %s but found %s", scalarTypeName(g.DType), scalarTypeName(in))
		}
		dim, err := softmaxDim(c, 2, g)
		if err != nil {
			return nil, err
		}
		b := c.B
		acc := accumElem(g.DType)
		gv, ov := b.Convert(c.T(0), acc), b.Convert(c.T(1), acc)
		var r *hlo.Value
		switch {
		case dim < 0 && log:
			r = b.Sub(gv, b.Mul(b.Exp(ov), gv))
		case dim < 0:
			r = b.Mul(ov, b.Sub(gv, b.Mul(gv, ov)))
		case log:
			r = b.Sub(gv, b.Mul(b.Exp(ov), reduceKeep(b, gv, dim, false)))
		default:
			r = b.Mul(ov, b.Sub(gv, reduceKeep(b, b.Mul(gv, ov), dim, false)))
		}
		return []*hlo.Value{b.Convert(r, in.Elem())}, nil
	}
}

func init() {
	def("aten::_softmax", softmaxRule(false))
	def("aten::_log_softmax", softmaxRule(true))
	def("aten::_softmax_backward_data", softmaxBackward(false))
	def("aten::_log_softmax_backward_data", softmaxBackward(true))
}
