package hlo

func (b *Builder) binary(name string, x, y *Value) *Value {
	if !x.T.Equal(y.T) {
		failf("%s: operand types differ: %v vs %v", name, x.T, y.T)
	}
	if x.T.Elem.IsComplex() && !complexBinary[name] {
		failf("%s is not defined for complex values", name)
	}
	return b.op("stablehlo."+name, x.T, "", x, y)
}

func (b *Builder) unary(name string, x *Value) *Value {
	if x.T.Elem.IsComplex() && realOnlyUnary[name] {
		failf("%s is not defined for complex values", name)
	}
	return b.op("stablehlo."+name, x.T, "", x)
}

// complexBinary lists the binary ops that take complex operands; the others
// (maximum, remainder, atan2, ...) order or round values, which complex
// numbers do not allow in PyTorch.
var complexBinary = map[string]bool{"add": true, "subtract": true, "multiply": true, "divide": true, "power": true}

// realOnlyUnary lists the unary ops that reject complex operands.
var realOnlyUnary = map[string]bool{"floor": true, "ceil": true, "round_nearest_even": true, "cbrt": true,
	"popcnt": true, "not": true}

// Add returns x + y elementwise; x and y have the same type.
func (b *Builder) Add(x, y *Value) *Value { return b.binary("add", x, y) }

// Sub returns x - y elementwise.
func (b *Builder) Sub(x, y *Value) *Value { return b.binary("subtract", x, y) }

// Mul returns x * y elementwise. XLA rewrites x*convert(p) of a predicate p
// into select(p, x, 0), which loses the NaN of inf*0 and the sign of -1*0:
// a float factor converted from a predicate is spelled as select(p, x, x*0),
// a complex one is built from its parts, so the product stays a product.
func (b *Builder) Mul(x, y *Value) *Value {
	if p := predicateOf(x); p != nil && (x.T.Elem.IsFloat() || x.T.Elem.IsComplex()) {
		x, y = y, x
	}
	if p := predicateOf(y); p != nil && y.T.Elem.IsFloat() {
		return b.Select(p, x, b.binary("multiply", x, b.Constant(x.T, 0)))
	}
	if p := predicateOf(y); p != nil && y.T.Elem.IsComplex() {
		re := b.Convert(p, y.T.Elem.Real())
		y = b.Complex(re, b.Constant(re.T, 0))
	}
	return b.binary("multiply", x, y)
}

// predicateOf returns the predicate v was converted from, or nil.
func predicateOf(v *Value) *Value {
	if v.node == nil || v.node.op != "stablehlo.convert" || v.node.operands[0].T.Elem != Pred {
		return nil
	}
	return v.node.operands[0]
}

// Div returns x / y elementwise (integer division truncates).
func (b *Builder) Div(x, y *Value) *Value { return b.binary("divide", x, y) }

// Rem returns the remainder of x / y with the sign of x.
func (b *Builder) Rem(x, y *Value) *Value { return b.binary("remainder", x, y) }

// Max returns the elementwise maximum; a NaN in either operand gives NaN
// (spelled out, since backends may compile maximum without NaN checks).
func (b *Builder) Max(x, y *Value) *Value { return b.propagateNaN(x, y, b.binary("maximum", x, y)) }

// Min returns the elementwise minimum; a NaN in either operand gives NaN.
func (b *Builder) Min(x, y *Value) *Value { return b.propagateNaN(x, y, b.binary("minimum", x, y)) }

func (b *Builder) propagateNaN(x, y, r *Value) *Value {
	if !x.T.Elem.IsFloat() {
		return r
	}
	r = b.Select(b.Compare(NE, y, y), y, r)
	return b.Select(b.Compare(NE, x, x), x, r)
}

// Pow returns x ** y elementwise.
func (b *Builder) Pow(x, y *Value) *Value { return b.binary("power", x, y) }

// Atan2 returns atan2(x, y) elementwise.
func (b *Builder) Atan2(x, y *Value) *Value { return b.binary("atan2", x, y) }

// And returns the bitwise or logical and.
func (b *Builder) And(x, y *Value) *Value { return b.binary("and", x, y) }

// Or returns the bitwise or logical or.
func (b *Builder) Or(x, y *Value) *Value { return b.binary("or", x, y) }

// Xor returns the bitwise or logical exclusive or.
func (b *Builder) Xor(x, y *Value) *Value { return b.binary("xor", x, y) }

// ShiftLeft returns x << y.
func (b *Builder) ShiftLeft(x, y *Value) *Value { return b.binary("shift_left", x, y) }

// ShiftRightArithmetic returns x >> y with sign extension.
func (b *Builder) ShiftRightArithmetic(x, y *Value) *Value {
	return b.binary("shift_right_arithmetic", x, y)
}

// ShiftRightLogical returns x >> y filling with zeros.
func (b *Builder) ShiftRightLogical(x, y *Value) *Value { return b.binary("shift_right_logical", x, y) }

// Unary ops, named as StableHLO names them.
func (b *Builder) Neg(x *Value) *Value       { return b.unary("negate", x) }
func (b *Builder) Exp(x *Value) *Value       { return b.unary("exponential", x) }
func (b *Builder) Expm1(x *Value) *Value     { return b.unary("exponential_minus_one", x) }
func (b *Builder) Log(x *Value) *Value       { return b.complexNaNs(x, b.unary("log", x), true) }
func (b *Builder) Log1p(x *Value) *Value     { return b.unary("log_plus_one", x) }
func (b *Builder) Sqrt(x *Value) *Value      { return b.complexNaNs(x, b.unary("sqrt", x), false) }
func (b *Builder) Rsqrt(x *Value) *Value     { return b.unary("rsqrt", x) }
func (b *Builder) Cbrt(x *Value) *Value      { return b.unary("cbrt", x) }
func (b *Builder) Tanh(x *Value) *Value      { return b.unary("tanh", x) }
func (b *Builder) Logistic(x *Value) *Value  { return b.unary("logistic", x) }
func (b *Builder) Sin(x *Value) *Value       { return b.unary("sine", x) }
func (b *Builder) Cos(x *Value) *Value       { return b.unary("cosine", x) }
func (b *Builder) Tan(x *Value) *Value       { return b.unary("tan", x) }
func (b *Builder) Floor(x *Value) *Value     { return b.unary("floor", x) }
func (b *Builder) Ceil(x *Value) *Value      { return b.unary("ceil", x) }
func (b *Builder) RoundEven(x *Value) *Value { return b.unary("round_nearest_even", x) }
func (b *Builder) Sign(x *Value) *Value      { return b.unary("sign", x) }
func (b *Builder) Not(x *Value) *Value       { return b.unary("not", x) }
func (b *Builder) IsFinite(x *Value) *Value {
	return b.op("stablehlo.is_finite", x.T.WithElem(Pred), "", x)
}
func (b *Builder) Erf(x *Value) *Value      { return b.op("chlo.erf", x.T, "", x) }
func (b *Builder) PopCount(x *Value) *Value { return b.unary("popcnt", x) }

// Compare directions.
const (
	EQ = "EQ"
	NE = "NE"
	LT = "LT"
	LE = "LE"
	GT = "GT"
	GE = "GE"
)

// Compare returns x dir y as a boolean tensor. Floats compare with IEEE
// semantics, unsigned types as unsigned.
func (b *Builder) Compare(dir string, x, y *Value) *Value {
	if !x.T.Equal(y.T) {
		failf("compare: operand types differ: %v vs %v", x.T, y.T)
	}
	if x.T.Elem.IsComplex() && dir != EQ && dir != NE {
		failf("compare: complex values have no order (%s)", dir)
	}
	kind := "SIGNED"
	switch {
	case x.T.Elem.IsFloat() || x.T.Elem.IsComplex():
		kind = "FLOAT"
	case x.T.Elem.IsUnsigned() || x.T.Elem == Pred:
		kind = "UNSIGNED"
	}
	attrs := "{compare_type = #stablehlo<comparison_type " + kind + ">, comparison_direction = #stablehlo<comparison_direction " + dir + ">}"
	return b.op("stablehlo.compare", x.T.WithElem(Pred), attrs, x, y)
}

// Select returns onTrue where pred holds and onFalse elsewhere.
func (b *Builder) Select(pred, onTrue, onFalse *Value) *Value {
	if !onTrue.T.Equal(onFalse.T) {
		failf("select: branch types differ: %v vs %v", onTrue.T, onFalse.T)
	}
	return b.op("stablehlo.select", onTrue.T, "", pred, onTrue, onFalse)
}

// Clamp returns min(max(x, lo), hi); lo and hi are scalars or x's shape.
func (b *Builder) Clamp(lo, x, hi *Value) *Value {
	return b.op("stablehlo.clamp", x.T, "", lo, x, hi)
}

// Convert converts x to element type e (float to int truncates toward zero).
func (b *Builder) Convert(x *Value, e Elem) *Value {
	if x.T.Elem == e {
		return x
	}
	if (e == U8 || e == S8 || e == S16 || e == S32 || e == S64) && x.T.Elem.IsComplex() {
		x = b.Real(x) // as XLA's convert would, so that the float rules below apply
	}
	if e == U8 && x.T.Elem.IsFloat() {
		// c10 casts floats to uint8 through int64, so that CPU and CUDA both
		// wrap (-56.0 gives 200); XLA's direct convert saturates to 0. What
		// int64 cannot hold (NaN, infinities) becomes its minimum on x86, 0 here.
		in := b.Compare(LT, b.Abs(x), b.BroadcastTo(b.Scalar(x.T.Elem, 0x1p63), x.T.Shape))
		i := b.op("stablehlo.convert", x.T.WithElem(S64), "", x)
		x = b.Select(in, i, b.BroadcastTo(b.ConstantInt(T(S64), 0), x.T.Shape))
	}
	if x.T.Elem.IsFloat() && (e == S8 || e == S16 || e == S32 || e == S64) {
		return b.floatToSigned(x, e)
	}
	return b.op("stablehlo.convert", x.T.WithElem(e), "", x)
}

// floatToSigned converts floats to a signed integer type as c10's casts do
// on x86 (what CPU tensors give): a value whose truncation int32 (int64 for
// int64) cannot hold, NaN and the infinities included, becomes that type's
// minimum, and int8 and int16 take the low bits of the int32 result (200.5
// gives -56, 1e10 gives 0). XLA's convert saturates instead.
func (b *Builder) floatToSigned(x *Value, e Elem) *Value {
	via := S32
	if e == S64 {
		via = S64
	}
	limit := 0x1p31
	if via == S64 {
		limit = 0x1p63
	}
	k := func(v float64) *Value { return b.BroadcastTo(b.Scalar(x.T.Elem, v), x.T.Shape) }
	in := b.And(b.Compare(LT, x, k(limit)), b.Compare(GE, x, k(-limit)))
	if x.T.Elem == F64 && via == S32 {
		in = b.And(b.Compare(LT, x, k(limit)), b.Compare(GT, x, k(-limit-1)))
	}
	lowest := int64(-1) << 31
	if via == S64 {
		lowest = -1 << 63
	}
	i := b.op("stablehlo.convert", x.T.WithElem(via), "", x)
	i = b.Select(in, i, b.BroadcastTo(b.ConstantInt(T(via), lowest), x.T.Shape))
	if via == e {
		return i
	}
	return b.op("stablehlo.convert", x.T.WithElem(e), "", i)
}

// BitcastReshape reinterprets the bits of x as type t, where the widths
// differ: a wider x gains a trailing dimension of the width ratio, a narrower
// x loses its trailing dimension.
func (b *Builder) BitcastReshape(x *Value, t Type) *Value {
	if x.T.NumElements()*int64(x.T.Elem.Bits()) != t.NumElements()*int64(t.Elem.Bits()) {
		failf("bitcast_convert: %v to %v changes the byte count", x.T, t)
	}
	return b.op("stablehlo.bitcast_convert", t, "", x)
}

// BitcastConvert reinterprets the bits of x as element type e of the same width.
func (b *Builder) BitcastConvert(x *Value, e Elem) *Value {
	if x.T.Elem.Bits() != e.Bits() {
		failf("bitcast_convert: width %d vs %d", x.T.Elem.Bits(), e.Bits())
	}
	return b.op("stablehlo.bitcast_convert", x.T.WithElem(e), "", x)
}
