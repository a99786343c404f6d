package dispatch

import (
	"strings"

	"torchtpu/hlo"
)

// compareRule builds a comparison: both sides promote to the result type and
// the result is bool (IEEE semantics: NaN compares unequal to everything).
// Complex values have no order: only eq and ne take them, as on CPU.
func compareRule(dir string) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		d := c.resultType(0, 1)
		if d.IsComplex() && dir != hlo.EQ && dir != hlo.NE {
			return nil, notImplemented(strings.ToLower(dir)+"_cpu", d)
		}
		vs, _, err := c.broadcastArgs(d, 0, 1)
		if err != nil {
			return nil, err
		}
		return []*hlo.Value{c.B.Compare(dir, vs[0], vs[1])}, nil
	}
}

// toPred returns x != 0 as a boolean tensor.
func toPred(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	if x.T.Elem == hlo.Pred {
		return x
	}
	return b.Compare(hlo.NE, x, b.BroadcastTo(b.Scalar(x.T.Elem, 0), x.T.Shape))
}

// logicalRule builds logical_and/or/xor: each side is truthy where nonzero.
func logicalRule(op func(b *hlo.Builder, x, y *hlo.Value) *hlo.Value) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		shape, err := BroadcastShapes(c.operandShape(0), c.operandShape(1))
		if err != nil {
			return nil, err
		}
		x := c.B.BroadcastTo(toPred(c.B, c.T(0)), shape)
		y := c.B.BroadcastTo(toPred(c.B, c.T(1)), shape)
		return []*hlo.Value{op(c.B, x, y)}, nil
	}
}

// whereRule is where(condition, self, other); self and other may be numbers.
func whereRule(c *Ctx) ([]*hlo.Value, error) {
	cond := c.Meta(0)
	if cond.DType != Bool && cond.DType != Uint8 {
		return nil, Errorf("where expected condition to be a boolean tensor, but got a tensor with dtype %s", scalarTypeName(cond.DType))
	}
	d := c.resultType(1, 2)
	shape, err := BroadcastShapes(cond.Sizes, c.operandShape(1), c.operandShape(2))
	if err != nil {
		return nil, err
	}
	p := c.B.BroadcastTo(toPred(c.B, c.T(0)), shape)
	x := c.B.BroadcastTo(c.Value(1, d), shape)
	y := c.B.BroadcastTo(c.Value(2, d), shape)
	return []*hlo.Value{c.B.Select(p, x, y)}, nil
}

// clampRule is clamp(self, min, max) with the bounds numbers or tensors
// (either may be absent): min(max(self, lo), hi), so NaN propagates and
// lo > hi gives hi. lo and hi are argument indices, -1 for none.
func clampRule(lo, hi int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		hasLo, hasHi := lo >= 0 && c.Has(lo), hi >= 0 && c.Has(hi)
		if !hasLo && !hasHi {
			return nil, Errorf("torch.clamp: At least one of 'min' or 'max' must not be None")
		}
		idx := []int{0}
		if hasLo {
			idx = append(idx, lo)
		}
		if hasHi {
			idx = append(idx, hi)
		}
		d := c.resultType(idx...)
		if err := clampRefused(c, d, lo, hi, hasLo, hasHi); err != nil {
			return nil, err
		}
		vs, shape, err := c.broadcastArgs(d, idx...)
		if err != nil {
			return nil, err
		}
		for k, i := range idx[1:] {
			if bound, err := clampNumber(c, i, d, i == lo); err != nil {
				return nil, err
			} else if bound != nil {
				vs[k+1] = c.B.BroadcastTo(bound, shape)
			}
		}
		b, r, k := c.B, vs[0], 1
		if hasLo {
			r = maxVal(b, r, vs[k], d)
			k++
		}
		if hasHi {
			r = minVal(b, r, vs[k], d)
		}
		return []*hlo.Value{r}, nil
	}
}

// clampNumber is clamp's Python-number bound i (nil for a tensor bound) in
// result dtype d as CPU's kernel takes it: for integer types a min above the
// type's range or a max below it is an error, and a bound past the other end
// bounds nothing (-3 as a uint8 min is no bound, not 253); floating types
// convert it with the overflow check.
func clampNumber(c *Ctx, i int, d DType, isMin bool) (*hlo.Value, error) {
	a := c.Args[i]
	if !a.IsScalar() || d == Bool || d.IsComplex() {
		return nil, nil
	}
	if d.IsFloat() {
		return nil, checkScalarFits(a, d)
	}
	if d == Int64 || d == UInt64 || d == UInt32 || !integral(a) {
		return nil, nil
	}
	lo, hi := int64(hlo.Lowest(d.Elem())), int64(hlo.Highest(d.Elem()))
	v := a.Int
	switch {
	case isMin && v > hi:
		return nil, Errorf("Clamp min value %s is outside the representable range of %s", cDouble(float64(v)), scalarTypeName(d))
	case !isMin && v < lo:
		return nil, Errorf("Clamp max value %s is outside the representable range of %s", cDouble(float64(v)), scalarTypeName(d))
	}
	return c.R.IntNumber(max(lo, min(hi, v)), d.Elem()), nil
}

// clampRefused is CPU's error for a clamp whose result dtype d has no
// kernel: complex results, and bool ones except a one-sided clamp by a
// tensor (clamp_min/clamp_max of tensors run as maximum and minimum).
func clampRefused(c *Ctx, d DType, lo, hi int, hasLo, hasHi bool) error {
	if d != Bool && !d.IsComplex() {
		return nil
	}
	tensors := (!hasLo || c.IsTensor(lo)) && (!hasHi || c.IsTensor(hi))
	kernel := map[[2]bool]string{{true, false}: "clamp_min", {false, true}: "clamp_max", {true, true}: "clamp"}[[2]bool{hasLo, hasHi}]
	switch {
	case c.Meta(0).DType.IsComplex() || !tensors && d.IsComplex():
		return &KindedError{NotImplementedErr, "clamp is not supported for complex types"}
	case !tensors:
		return notImplemented(kernel+"_scalar_cpu", d)
	case hasLo && hasHi:
		return notImplemented("clamp_cpu", d)
	case d == Bool:
		return nil
	case hasLo:
		return notImplemented("maximum_cpu", d)
	}
	return notImplemented("minimum_cpu", d)
}

func maxVal(b *hlo.Builder, x, y *hlo.Value, d DType) *hlo.Value {
	r, _ := maxOp(b, x, y, d)
	return r
}

func minVal(b *hlo.Builder, x, y *hlo.Value, d DType) *hlo.Value {
	r, _ := minOp(b, x, y, d)
	return r
}

func init() {
	for _, op := range []struct{ name, dir string }{
		{"eq", hlo.EQ}, {"ne", hlo.NE}, {"lt", hlo.LT}, {"le", hlo.LE}, {"gt", hlo.GT}, {"ge", hlo.GE},
	} {
		def("aten::"+op.name+".Tensor", compareRule(op.dir), "aten::"+op.name+".Tensor_out").Range = compareRange(op.dir)
		def("aten::"+op.name+".Scalar", compareRule(op.dir), "aten::"+op.name+".Scalar_out").Range = compareRange(op.dir)
	}
	def("aten::logical_and", logicalRule((*hlo.Builder).And)).Range = logicalRange(true)
	def("aten::logical_or", logicalRule((*hlo.Builder).Or)).Range = logicalRange(false)
	def("aten::logical_xor", logicalRule((*hlo.Builder).Xor))
	def("aten::where.self", whereRule, "aten::where.self_out").Range = selectRange(0, 1, 2)
	def("aten::where.ScalarOther", whereRule, "").Range = selectRange(0, 1, 2)
	def("aten::where.ScalarSelf", whereRule, "").Range = selectRange(0, 1, 2)
	def("aten::where.Scalar", whereRule, "").Range = selectRange(0, 1, 2)
	def("aten::clamp", clampRule(1, 2)).Range = clampRange(1, 2)
	def("aten::clamp.Tensor", clampRule(1, 2), "aten::clamp.Tensor_out").Range = clampRange(1, 2)
	def("aten::clamp_min", clampRule(1, -1)).Range = clampRange(1, -1)
	def("aten::clamp_min.Tensor", clampRule(1, -1), "aten::clamp_min.Tensor_out").Range = clampRange(1, -1)
	def("aten::clamp_max", clampRule(-1, 1)).Range = clampRange(-1, 1)
	def("aten::clamp_max.Tensor", clampRule(-1, 1), "aten::clamp_max.Tensor_out").Range = clampRange(-1, 1)
}
