package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// binaryOp emits a binary op on x and y of dtype d.
type binaryOp func(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error)

// arith builds a rule for a promoting binary op on arguments 0 and 1.
func arith(op binaryOp, intToFloat bool) Fn { return arithOf(op, intToFloat, false) }

// arithOpmath is arith for the ops whose CPU kernels read a one-element
// second operand of a half-type result at float32 precision (opmathScalar):
// mul, true division and floor division.
func arithOpmath(op binaryOp, intToFloat bool) Fn { return arithOf(op, intToFloat, true) }

// opmathScalar reports whether argument 1 is a one-element operand that CPU's
// kernel for half-type result d reads with iter.original_scalar_value, in
// float32 and not narrowed to d: bf16 * 0.1 multiplies by 0.1f and rounds
// once (narrowed, 0.1 is 0.10009765625 and a fifth of the products differ).
func (c *Ctx) opmathScalar(d DType) bool {
	if d != Float16 && d != BFloat16 {
		return false
	}
	a := c.Args[1]
	if a.Kind == ArgTensor {
		m := c.Meta(1)
		return m.Numel() == 1 && m.DType != d && !m.DType.IsComplex()
	}
	return a.IsScalar() && a.Kind != ArgScalarComplex
}

// inOpmath emits op on arguments 0 and 1 in float32 (argument 0 narrowed to
// d first, as CPU's iterator casts it) and rounds the result to d once.
func (c *Ctx) inOpmath(d DType, op binaryOp) ([]*hlo.Value, error) {
	shape, err := BroadcastShapes(c.operandShape(0), c.operandShape(1))
	if err != nil {
		return nil, err
	}
	b := c.B
	x := b.BroadcastTo(b.Convert(c.Value(0, d), hlo.F32), shape)
	y := b.BroadcastTo(c.Value(1, Float32), shape)
	r, err := op(b, x, y, Float32)
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{b.Convert(r, d.Elem())}, nil
}

func arithOf(op binaryOp, intToFloat, opmath bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		d := c.resultType(0, 1)
		if err := refusedByCPU(c.Op, d); err != nil {
			return nil, err
		}
		if intToFloat && !d.IsFloat() && !d.IsComplex() {
			d = DefaultFloat()
		}
		if opmath && c.opmathScalar(d) {
			return c.inOpmath(d, op)
		}
		vs, _, err := c.broadcastArgs(d, 0, 1)
		if err != nil {
			return nil, err
		}
		r, err := op(c.B, vs[0], vs[1], d)
		if err != nil {
			return nil, err
		}
		return []*hlo.Value{r}, nil
	}
}

// subCheck is CPU's refusal of subtraction with a bool operand (a Python
// True or False included), checked before any kernel is chosen.
func subCheck(c *Ctx, i, j int) error {
	bi, bj := c.Operand(i).DType == Bool, c.Operand(j).DType == Bool
	if bi && bj {
		return &KindedError{NotImplementedErr, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."}
	}
	if bi || bj {
		return &KindedError{NotImplementedErr, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."}
	}
	return nil
}

// alphaCheck is CPU's check of add and sub's alpha (argument i) against
// result dtype d: a bool alpha only for bool results, an integral one for
// integer results, no complex one for real results, and a value d holds.
func alphaCheck(c *Ctx, i int, d DType) error {
	if !c.Has(i) {
		return nil
	}
	a := c.Args[i]
	switch {
	case (a.Kind == ArgScalarBool || a.Kind == ArgBool) && d != Bool:
		return Errorf("Boolean alpha only supported for Boolean results.")
	case !d.IsFloat() && !d.IsComplex() && (a.Kind == ArgScalarDouble || a.Kind == ArgDouble || a.Kind == ArgScalarComplex):
		return Errorf("For integral input tensors, argument alpha must not be a floating point number.")
	case !d.IsComplex() && a.Kind == ArgScalarComplex:
		return Errorf("For non-complex input tensors, argument alpha must not be a complex number.")
	}
	return checkScalarFits(a, d)
}

// addSub builds add or sub with the alpha multiplier of argument 2.
func addSub(sub bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		d := c.resultType(0, 1)
		alpha := c.Float(2, 1)
		if sub {
			if err := subCheck(c, 0, 1); err != nil {
				return nil, err
			}
		}
		if err := alphaCheck(c, 2, d); err != nil {
			return nil, err
		}
		vs, _, err := c.broadcastArgs(d, 0, 1)
		if err != nil {
			return nil, err
		}
		y := vs[1]
		if alpha != 1 && (d == Float16 || d == BFloat16) {
			// CPU narrows alpha to d, then forms x + alpha*y in float32 and rounds once.
			b := c.B
			a := b.Convert(b.BroadcastTo(c.R.Scalar(alpha, d.Elem()), y.T.Shape), hlo.F32)
			x32, y32 := b.Convert(vs[0], hlo.F32), b.Mul(b.Convert(y, hlo.F32), a)
			if sub {
				return []*hlo.Value{b.Convert(b.Sub(x32, y32), d.Elem())}, nil
			}
			return []*hlo.Value{b.Convert(b.Add(x32, y32), d.Elem())}, nil
		}
		if alpha != 1 {
			y = c.B.Mul(y, c.B.BroadcastTo(c.R.Scalar(alpha, d.Elem()), y.T.Shape))
		}
		if d == Bool {
			return []*hlo.Value{c.B.Or(vs[0], y)}, nil
		}
		if sub {
			return []*hlo.Value{c.B.Sub(vs[0], y)}, nil
		}
		return []*hlo.Value{c.B.Add(vs[0], y)}, nil
	}
}

func mulOp(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
	if d == Bool {
		return b.And(x, y), nil
	}
	return b.Mul(x, y), nil
}

func trueDiv(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) { return b.Div(x, y), nil }

// intDivision wraps floor_divide, remainder and fmod (div with a rounding
// mode checks in divMode) with CPU's ZeroDivisionError for an integer result
// whose divisor, argument 1, holds a zero: a Python number is checked as it
// comes, a tensor by its known value range or else by reading it (the rules
// declare it a host argument; floating divisors are never read).
// XLA's integer division by zero gives -1 or the dividend instead.
func intDivision(fn Fn) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		if d := c.resultType(0, 1); !d.IsFloat() && !d.IsComplex() && d != Bool {
			if err := c.checkNonzeroDivisor(1); err != nil {
				return nil, err
			}
		}
		return fn(c)
	}
}

func (c *Ctx) checkNonzeroDivisor(i int) error {
	zero := Errorf("ZeroDivisionError")
	a := c.Args[i]
	if a.IsScalar() {
		if a.Value() == 0 && (a.Kind != ArgScalarComplex || a.Doubles[1] == 0) {
			return zero
		}
		return nil
	}
	if a.Kind != ArgTensor || c.NoHostChecks || c.Meta(i).Numel() == 0 {
		return nil
	}
	if lo, hi, ok := c.argRange(i); ok && (lo > 0 || hi < 0) {
		return nil
	}
	vs, err := c.R.Int64s(a.Handles[0])
	if err != nil {
		return err
	}
	if slices.Contains(vs, 0) {
		return zero
	}
	return nil
}

// divMode implements div with rounding_mode (argument 2): None, "trunc" or "floor".
func divMode(c *Ctx) ([]*hlo.Value, error) {
	mode := c.Str(2, "")
	if mode == "" {
		return arithOpmath(trueDiv, true)(c)
	}
	d := c.resultType(0, 1)
	if d.IsComplex() {
		return nil, notImplemented("div_"+mode+"_cpu", d)
	}
	if !d.IsFloat() && d != Bool {
		if err := c.checkNonzeroDivisor(1); err != nil {
			return nil, err // rounding division of integers, as intDivision
		}
	}
	if mode == "floor" && c.opmathScalar(d) {
		return c.inOpmath(d, floorDivideOp)
	}
	vs, _, err := c.broadcastArgs(d, 0, 1)
	if err != nil {
		return nil, err
	}
	b, x, y := c.B, vs[0], vs[1]
	switch mode {
	case "trunc":
		if d == Bool {
			return nil, notImplemented("div_trunc_cpu", d)
		}
		q := b.Div(x, y)
		if d.IsFloat() {
			q = truncFloat(b, q)
		}
		return []*hlo.Value{q}, nil
	case "floor":
		q, err := floorDivideOp(b, x, y, d)
		return []*hlo.Value{q}, err
	}
	return nil, Errorf("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'", mode)
}

func truncFloat(b *hlo.Builder, q *hlo.Value) *hlo.Value {
	zero := b.BroadcastTo(b.Scalar(q.T.Elem, 0), q.T.Shape)
	return b.Select(b.Compare(hlo.LT, q, zero), b.Ceil(q), b.Floor(q))
}

// floorDiv rounds the quotient toward negative infinity, as Python's //
// does for integers (floats take floorDivideOp's steps).
func floorDiv(b *hlo.Builder, x, y *hlo.Value, d DType) *hlo.Value {
	q := b.Div(x, y)
	r := b.Rem(x, y)
	zero := b.BroadcastTo(b.Scalar(d.Elem(), 0), x.T.Shape)
	one := b.BroadcastTo(b.Scalar(d.Elem(), 1), x.T.Shape)
	signsDiffer := b.Xor(b.Compare(hlo.LT, r, zero), b.Compare(hlo.LT, y, zero))
	adjust := b.And(b.Compare(hlo.NE, r, zero), signsDiffer)
	return b.Select(adjust, b.Sub(q, one), q)
}

// remainderOp is Python's %: the result takes the divisor's sign.
func remainderOp(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
	r := b.Rem(x, y)
	zero := b.BroadcastTo(b.Scalar(d.Elem(), 0), x.T.Shape)
	signsDiffer := b.Xor(b.Compare(hlo.LT, r, zero), b.Compare(hlo.LT, y, zero))
	adjust := b.And(b.Compare(hlo.NE, r, zero), signsDiffer)
	return b.Select(adjust, b.Add(r, y), r), nil
}

func fmodOp(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) { return b.Rem(x, y), nil }

func powOp(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
	if d == Bool {
		return nil, notImplemented("pow", d)
	}
	if d.IsIntegral(false) {
		return intPow(b, x, y, d), nil
	}
	return b.Pow(x, y), nil
}

// intPow is CPU's powi: squaring over every bit of the exponent, wrapping on
// overflow (XLA:CPU's integer power reads only the exponent's low 6 bits, so
// 0^64 gave 1), and for a negative exponent 1, ±1 for a base of -1, else 0.
func intPow(b *hlo.Builder, x, y *hlo.Value, d DType) *hlo.Value {
	k := func(v int64) *hlo.Value { return b.BroadcastTo(b.ConstantInt(hlo.T(x.T.Elem), v), x.T.Shape) }
	zero, one := k(0), k(1)
	r, base := one, x
	for i := 0; i < x.T.Elem.Bits(); i++ {
		bit := b.Compare(hlo.NE, b.And(b.ShiftRightLogical(y, k(int64(i))), one), zero)
		r = b.Select(bit, b.Mul(r, base), r)
		base = b.Mul(base, base)
	}
	if x.T.Elem.IsUnsigned() {
		return r
	}
	odd := b.Compare(hlo.NE, b.And(y, one), zero)
	negOne := b.Select(odd, k(-1), one)
	neg := b.Select(b.Compare(hlo.EQ, x, one), one, b.Select(b.Compare(hlo.EQ, x, k(-1)), negOne, zero))
	return b.Select(b.Compare(hlo.LT, y, zero), neg, r)
}

func maxOp(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
	if d == Bool {
		return b.Or(x, y), nil
	}
	return b.Max(x, y), nil
}

func minOp(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
	if d == Bool {
		return b.And(x, y), nil
	}
	return b.Min(x, y), nil
}

func atan2Op(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) { return b.Atan2(x, y), nil }

func bitwise(f func(b *hlo.Builder, x, y *hlo.Value) *hlo.Value, name string) func(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
	return func(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
		if d.IsFloat() {
			return nil, notImplemented(name+"_cpu", d)
		}
		return f(b, x, y), nil
	}
}

// shiftOp shifts x by y bits as PyTorch's CPU kernels do: a shift count
// outside [0, bits) gives 0 to the left, and to the right the sign fill
// (0 for unsigned types).
func shiftOp(left bool) func(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
	return func(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
		if !d.IsIntegral(false) {
			return nil, notImplemented(map[bool]string{true: "lshift_cpu", false: "rshift_cpu"}[left], d)
		}
		bits := int64(d.Elem().Bits())
		zero := b.BroadcastTo(b.ConstantInt(hlo.T(d.Elem()), 0), x.T.Shape)
		limit := b.BroadcastTo(b.ConstantInt(hlo.T(d.Elem()), bits), x.T.Shape)
		out := b.Or(b.Compare(hlo.LT, y, zero), b.Compare(hlo.GE, y, limit))
		if left {
			return b.Select(out, zero, b.ShiftLeft(x, y)), nil
		}
		if d == Uint8 || d == UInt16 || d == UInt32 || d == UInt64 {
			return b.Select(out, zero, b.ShiftRightLogical(x, y)), nil
		}
		top := b.BroadcastTo(b.ConstantInt(hlo.T(d.Elem()), bits-1), x.T.Shape)
		return b.ShiftRightArithmetic(x, b.Select(out, top, y)), nil
	}
}

func init() {
	def("aten::bitwise_left_shift.Tensor", arith(shiftOp(true), false), "aten::bitwise_left_shift.Tensor_out")
	def("aten::bitwise_left_shift.Tensor_Scalar", arith(shiftOp(true), false), "aten::bitwise_left_shift.Tensor_Scalar_out")
	def("aten::bitwise_right_shift.Tensor", arith(shiftOp(false), false), "aten::bitwise_right_shift.Tensor_out")
	def("aten::bitwise_right_shift.Tensor_Scalar", arith(shiftOp(false), false), "aten::bitwise_right_shift.Tensor_Scalar_out")
	for _, o := range []string{"Tensor", "Scalar"} {
		l := def("aten::__lshift__."+o, arith(shiftOp(true), false), "")
		alias("aten::__ilshift__."+o, l, Inplace)
		r := def("aten::__rshift__."+o, arith(shiftOp(false), false), "")
		alias("aten::__irshift__."+o, r, Inplace)
	}
	def("aten::add.Tensor", addSub(false)).Range = addRange(false)
	add := def("aten::add.Scalar", addSub(false), "aten::add.Scalar_out")
	add.ComplexScalar, add.Range = 1, addRange(false)
	def("aten::sub.Tensor", addSub(true)).Range = addRange(true)
	sub := def("aten::sub.Scalar", addSub(true), "aten::sub.Scalar_out")
	sub.ComplexScalar, sub.Range = 1, addRange(true)
	def("aten::mul.Tensor", arithOpmath(mulOp, false)).Range = mulRange
	mul := def("aten::mul.Scalar", arithOpmath(mulOp, false), "aten::mul.Scalar_out")
	mul.ComplexScalar, mul.Range = 1, mulRange
	def("aten::div.Tensor", arithOpmath(trueDiv, true))
	def("aten::div.Scalar", arithOpmath(trueDiv, true), "aten::div.Scalar_out").ComplexScalar = 1
	def("aten::div.Tensor_mode", divMode, "aten::div.out_mode").Needs = hostArgs(1)
	def("aten::div.Scalar_mode", divMode, "aten::div.Scalar_mode_out").Needs = hostArgs(1)
	def("aten::remainder.Tensor", intDivision(arith(remainderOp, false)), "aten::remainder.Tensor_out").Needs = hostArgs(1)
	def("aten::remainder.Scalar", intDivision(arith(remainderOp, false)), "aten::remainder.Scalar_out").Needs = hostArgs(1)
	def("aten::remainder.Scalar_Tensor", intDivision(arith(remainderOp, false)), "aten::remainder.Scalar_Tensor_out").Needs = hostArgs(1)
	def("aten::fmod.Tensor", intDivision(arith(fmodOp, false)), "aten::fmod.Tensor_out").Needs = hostArgs(1)
	def("aten::fmod.Scalar", intDivision(arith(fmodOp, false)), "aten::fmod.Scalar_out").Needs = hostArgs(1)
	tt := def("aten::pow.Tensor_Tensor", arith(powOp, false), "aten::pow.Tensor_Tensor_out")
	ts := def("aten::pow.Tensor_Scalar", powTensorScalar, "aten::pow.Tensor_Scalar_out")
	// pow_'s overloads are named after the exponent: pow_.Scalar is pow.Tensor_Scalar in place, not pow.Scalar
	// (a number to a tensor power), which def would derive it from.
	alias("aten::pow_.Scalar", ts, Inplace)
	alias("aten::pow_.Tensor", tt, Inplace)
	def("aten::pow.Scalar", arith(powOp, false), "aten::pow.Scalar_out")
	def("aten::maximum", arith(maxOp, false))
	def("aten::minimum", arith(minOp, false))
	def("aten::atan2", arith(atan2Op, true))
	def("aten::bitwise_and.Tensor", arith(bitwise((*hlo.Builder).And, "bitwise_and"), false), "aten::bitwise_and.Tensor_out").Range = bitwiseRange("and")
	def("aten::bitwise_or.Tensor", arith(bitwise((*hlo.Builder).Or, "bitwise_or"), false), "aten::bitwise_or.Tensor_out").Range = bitwiseRange("or")
	def("aten::bitwise_xor.Tensor", arith(bitwise((*hlo.Builder).Xor, "bitwise_xor"), false), "aten::bitwise_xor.Tensor_out").Range = bitwiseRange("xor")
}
