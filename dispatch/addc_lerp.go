// addcmul, addcdiv and lerp: pointwise ops of three operands.

package dispatch

import (
	"strings"

	"torchtpu/hlo"
)

// addcCore returns self + value * (t1 op t2) in the promoted dtype of the
// three tensors (indices into c's arguments), for addcmul and addcdiv; value
// is a scalar already in that dtype, or nil to read argument valueArg.
func addcCore(c *Ctx, div bool, valueArg int, value *hlo.Value) (*hlo.Value, error) {
	d := c.resultType(0, 1, 2)
	if div && !d.IsFloat() && c.Meta(1).DType.IsIntegral(true) && c.Meta(2).DType.IsIntegral(true) {
		return nil, Errorf("Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")
	}
	if d == Bool {
		return nil, notImplemented(map[bool]string{false: "addcmul_cpu_out", true: "addcdiv_cpu_out"}[div], d)
	}
	if c.Has(valueArg) && !d.IsFloat() {
		if err := checkScalarFits(c.Args[valueArg], d); err != nil {
			return nil, err // CPU converts value to an integer result's type
		}
	}
	vs, shape, err := c.broadcastArgs(d, 0, 1, 2)
	if err != nil {
		return nil, err
	}
	b := c.B
	// Half types compute in float32 and round once, as CPU's kernels do (their opmath type).
	acc := d.Elem()
	if d.IsFloat() {
		acc = accumElem(d)
	}
	if value == nil && c.Has(valueArg) && !d.IsFloat() {
		value = c.Value(valueArg, d) // exact for integers past 2**53
	} else if value == nil {
		value = c.R.Scalar(c.Float(valueArg, 1), acc)
	}
	v := b.BroadcastTo(b.Convert(value, acc), shape)
	x, t1, t2 := b.Convert(vs[0], acc), b.Convert(vs[1], acc), b.Convert(vs[2], acc)
	// (value * t1) op t2, in CPU's order of operations.
	var t *hlo.Value
	if div {
		t = b.Div(b.Mul(v, t1), t2)
	} else {
		t = b.Mul(b.Mul(v, t1), t2)
	}
	return b.Convert(b.Add(x, t), d.Elem()), nil
}

// addcRule is addcmul(self, tensor1, tensor2, *, value) or addcdiv.
func addcRule(div bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		r, err := addcCore(c, div, 3, nil)
		if err != nil {
			return nil, err
		}
		return []*hlo.Value{r}, nil
	}
}

// lerpRule is lerp.Scalar(self, end, weight) and lerp.Tensor: self +
// weight * (end - self), computed from the nearer end as PyTorch does.
func lerpRule(c *Ctx) ([]*hlo.Value, error) {
	d := c.Meta(0).DType
	// CPU checks the dtypes of end and weight before it looks for a kernel.
	if c.Meta(1).DType != d {
		return nil, Errorf("expected dtype %s for `end` but got dtype %s", cppName(d), cppName(c.Meta(1).DType))
	}
	if c.IsTensor(2) && c.Meta(2).DType != d {
		return nil, Errorf("expected dtype %s for `weight` but got dtype %s", cppName(d), cppName(c.Meta(2).DType))
	}
	if !d.IsFloat() && !d.IsComplex() {
		return nil, notImplemented(map[bool]string{true: "lerp_kernel_tensor", false: "lerp_kernel_scalar"}[strings.Contains(c.Op, "lerp.Tensor")], d)
	}
	vs, shape, err := c.broadcastArgs(d, 0, 1, 2)
	if err != nil {
		return nil, err
	}
	b := c.B
	// Half types compute in float32 and round once, as CPU's kernel does.
	acc := accumElem(d)
	x, e, w := b.Convert(vs[0], acc), b.Convert(vs[1], acc), b.Convert(vs[2], acc)
	if !c.IsTensor(2) && acc != d.Elem() {
		// A Python weight stays a float32 number, not one rounded to the half type first.
		w = b.BroadcastTo(c.R.Scalar(c.Float(2, 0), acc), shape)
	}
	diff := b.Sub(e, x)
	// A complex weight picks its end by its magnitude.
	half := b.BroadcastTo(b.Scalar(acc.Real(), 0.5), shape)
	one := b.BroadcastTo(b.Scalar(acc, 1), shape)
	low := b.Add(x, b.Mul(w, diff))
	high := b.Sub(e, b.Mul(diff, b.Sub(one, w)))
	return []*hlo.Value{b.Convert(b.Select(b.Compare(hlo.LT, b.Abs(w), half), low, high), d.Elem())}, nil
}

func init() {
	def("aten::addcmul", addcRule(false))
	def("aten::addcdiv", addcRule(true))
	def("aten::lerp.Scalar", lerpRule, "aten::lerp.Scalar_out")
	def("aten::lerp.Tensor", lerpRule, "aten::lerp.Tensor_out")
}
