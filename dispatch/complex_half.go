package dispatch

import (
	"strings"

	"torchtpu/hlo"
)

// complex32 (ComplexHalf) is computed as complex64: a rule reads a complex32
// tensor as complex64 values and its complex64 results are complex32, stored
// rounded (engine/stored.go). A rule needs no code of its own for it: which
// results are complex32 is decided here, from the op's arguments
// (Ctx.ResultDType). Only the ops whose CPU kernels take complex32 run on
// tpu for it; for the others the call goes to CPU like an op without a rule,
// so it computes what CPU computes or raises CPU's NotImplementedError.

// complexHalfOps lists, by the base name of their functional rule, the ops
// CPU PyTorch implements for complex32 that have tpu rules: copies and
// factories, indexing, concatenation, the arithmetic CPU has complex32
// kernels for (add, sub, mul, neg, abs, sgn), comparisons and value tests,
// and norms. CPU has none for exp, division, sums, matrix products, sorting
// or FFTs, among others. Left out, so that they behave on CPU as CPU does:
// ops CPU implements for complex32 only in part (flip along the first
// dimension alone, index_reduce's prod), and addcmul, whose CPU kernel
// rounds to complex32 after each of its products.
var complexHalfOps = map[string]bool{
	"_conj_physical": true, "abs": true, "add": true, "all": true, "any": true, "cat": true,
	"clone": true, "conj_physical": true, "constant_pad_nd": true, "copy": true, "count_nonzero": true, "eq": true,
	"fill": true, "index": true, "index_add": true, "index_copy": true, "index_fill": true,
	"index_put": true, "index_select": true, "isinf": true, "isnan": true,
	"linalg_vector_norm": true, "masked_fill": true, "masked_select": true, "mul": true, "ne": true, "neg": true,
	"nonzero": true, "nonzero_static": true, "normal_functional": true, "roll": true, "sgn": true, "sub": true,
	"tril": true, "triu": true, "uniform": true, "where": true, "zero": true,
}

// ComplexHalfOp reports whether op (any variant name) runs on tpu for
// complex32 tensors.
func ComplexHalfOp(op string) bool {
	e, ok := Lookup(op)
	return ok && complexHalfOps[ruleBase(e.Rule)]
}

// ruleBaseOf returns op's name without "aten::" and overload: "add" for
// aten::add.Tensor.
func ruleBaseOf(op string) string {
	base, _, _ := strings.Cut(strings.TrimPrefix(op, "aten::"), ".")
	return base
}

// ruleBase returns the name of r without "aten::" and overload: "add" for
// aten::add.Tensor.
func ruleBase(r *Rule) string { return ruleBaseOf(r.Name) }

// AcceptsComplexHalf reports whether op runs on tpu for args: it has no
// complex32 tensor argument, or it is one of the ops CPU implements for
// complex32 (ComplexHalfOp).
func AcceptsComplexHalf(op string, args []Arg) bool {
	half, cplx := false, false // among the first two arguments, the promotion operands
	for i, a := range args {
		cplx = cplx || i < 2 && a.Kind == ArgScalarComplex
		for _, m := range a.Tensors {
			if !m.Defined {
				continue
			}
			if m.DType == ComplexHalf {
				return ComplexHalfOp(op)
			}
			if i < 2 && a.Kind == ArgTensor {
				half = half || m.DType == Float16 && !m.Number
				cplx = cplx || m.DType.IsComplex()
			}
		}
	}
	if !half || !cplx {
		return true
	}
	if e, ok := Lookup(op); ok && halfPromoting[ruleBase(e.Rule)] && len(args) >= 2 && halfMeetsComplex(operandsOf(args[:2])) {
		return ComplexHalfOp(op)
	}
	return true
}

// halfPromoting lists the arithmetic ops whose float16 tensor arguments
// meet a complex number or 0-dim complex tensor in CPU's type promotion and
// so compute complex32 (half + 1j is complex32 on CPU).
var halfPromoting = map[string]bool{"add": true, "sub": true, "mul": true, "div": true, "rsub": true, "pow": true}

// operandsOf returns the promotion operands of args (an op's self and
// other): tensors and Python numbers.
func operandsOf(args []Arg) []Operand {
	var ops []Operand
	for _, a := range args {
		if (a.Kind == ArgTensor && a.Tensors[0].Defined) || a.IsScalar() {
			ops = append(ops, operandOf(a))
		}
	}
	return ops
}

// halfMeetsComplex reports whether a float16 tensor and a complex operand
// meet and promote to complex32.
func halfMeetsComplex(ops []Operand) bool {
	half, cplx := false, false
	for _, o := range ops {
		half = half || (o.DType == Float16 && o.Kind != KindWrapped)
		cplx = cplx || o.DType.IsComplex()
	}
	return half && cplx && ResultType(ops...) == ComplexHalf
}

// halfMode says whether a rule computes complex32 (see Ctx.ResultDType).
type halfMode uint8

const (
	halfFromArgs halfMode = iota // decided from the tensor arguments
	halfYes
	halfNo
)

// SetComplexHalf marks the running rule as one that computes complex32 from
// arguments of other dtypes (complex and polar of float16 parts).
func (c *Ctx) SetComplexHalf() { c.half = halfYes }

// ComputesComplexHalf reports whether the running op computes complex32: a
// dtype argument says so, or its tensor arguments' result type is
// complex32. Python numbers never widen complex32, and an explicit dtype
// argument of another dtype decides against it. Float8 arguments take no
// part: PyTorch promotes them with no other dtype, so they meet complex32
// only in copies, which the rule's result type decides.
func (c *Ctx) ComputesComplexHalf() bool {
	if c.half == halfFromArgs {
		c.half = halfNo
		var ops []Operand
		for i, a := range c.Args[:len(c.Args)-c.OutArgs] {
			switch a.Kind {
			case ArgTensor:
				if a.Tensors[0].Defined && !a.Tensors[0].DType.IsFloat8() {
					ops = append(ops, c.Operand(i))
				}
			case ArgTensorList:
				for _, m := range a.Tensors {
					if m.Defined && !m.DType.IsFloat8() {
						kind := KindDim
						if m.Rank() == 0 {
							kind = KindZeroDim
						}
						ops = append(ops, Operand{m.DType, kind})
					}
				}
			}
		}
		if hasComplexHalf(ops) && ResultType(ops...) == ComplexHalf {
			c.half = halfYes
		}
		if halfPromoting[strings.TrimSuffix(ruleBaseOf(c.Op), "_")] && len(c.Args) >= 2 && halfMeetsComplex(operandsOf(c.Args[:2])) {
			c.half = halfYes
		}
	}
	return c.half == halfYes
}

// hasComplexHalf reports whether an operand is complex32: without one no
// result is, and the result type is not asked (it refuses some pairs, such
// as complex64 with uint16, that a copy_ between them never promotes).
func hasComplexHalf(ops []Operand) bool {
	for _, o := range ops {
		if o.DType == ComplexHalf {
			return true
		}
	}
	return false
}

// ResultDType returns the dtype of v, a result of the running rule: the
// dtype of its element type, except in an op that computes complex32
// (ComputesComplexHalf), whose complex64 results are complex32 and whose
// float32 results (abs, norms) are float16, each rounded when stored, and
// except in an op that computes a float8 dtype, whose float32 results are of
// that dtype (float8.go).
func (c *Ctx) ResultDType(v *hlo.Value) DType {
	d := FromElem(v.T.Elem)
	if f := c.computesFloat8(); f != Undefined && d == Float32 {
		return f
	}
	if (d != Complex64 && d != Float32) || !c.ComputesComplexHalf() {
		return d
	}
	if d == Complex64 {
		return ComplexHalf
	}
	return Float16
}
