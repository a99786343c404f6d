package dispatch

import "torchtpu/hlo"

// The float8 dtypes are computed as float32: a rule reads a float8 tensor
// as float32 values, and its float32 results are of the float8 dtype the op
// computes, rounded to it with CPU's rounding when stored (engine/stored.go).
// Which dtype that is comes from the op's arguments: a dtype argument, else
// the first float8 tensor argument (PyTorch promotes a float8 dtype with no
// other, so an op's float8 tensors share one). Only the ops CPU implements
// for float8 run on tpu for it; for the others the call goes to CPU like an
// op without a rule, so it computes what CPU computes or raises CPU's
// NotImplementedError.

// float8Ops lists, by the base name of their functional rule, the ops CPU
// PyTorch implements for the float8 dtypes that have tpu rules: copies,
// conversions and fills, indexing by index tensors and masks, concatenation,
// padding and rolls, equality and value tests (isnan, isinf), where, and the
// products CPU computes in float and rounds once
// (mul of two tensors, abs, matrix products), and sum and mean into another
// dtype (their rules send a float8 result to CPU, which refuses it). CPU has
// none for add, division, order comparisons, sorting, gather and scatter,
// among others. Left out, so that they behave on CPU as CPU does: mul by a
// number or a one-element tensor (CPU refuses it), and index_put's
// accumulate (CPU rounds after each add).
var float8Ops = map[string]bool{
	"abs": true, "abs_": true, "addmm": true, "all": true, "any": true, "cat": true, "clone": true,
	"constant_pad_nd": true, "copy": true, "eq": true, "fill": true, "index": true, "index_put": true,
	"index_select": true, "isinf": true, "isnan": true, "masked_select": true, "mean": true, "mm": true,
	"mul": true, "ne": true, "roll": true, "sum": true, "where": true, "zero": true,
}

// Float8Op reports whether op (any variant name) runs on tpu for float8
// tensors.
func Float8Op(op string) bool {
	e, ok := Lookup(op)
	return ok && float8Ops[ruleBase(e.Rule)]
}

// AcceptsFloat8 reports whether op runs on tpu for args: it has no float8
// tensor argument, or it is one of the ops CPU implements for float8
// (Float8Op) and its arguments are ones CPU takes.
func AcceptsFloat8(op string, args []Arg) bool {
	has := false
	for _, a := range args {
		for _, m := range a.Tensors {
			has = has || m.Defined && m.DType.IsFloat8()
		}
	}
	if !has {
		return true
	}
	if !Float8Op(op) {
		return false
	}
	e, _ := Lookup(op)
	switch ruleBase(e.Rule) {
	case "mul":
		// CPU multiplies float8 tensors, but not by a number or a second
		// operand of one element (its kernel's scalar path has no float8).
		for _, a := range args[1:] {
			if a.IsScalar() || a.Kind == ArgTensor && a.Tensors[0].Numel() == 1 {
				return false
			}
		}
	case "index_put":
		for _, a := range args {
			if a.Kind == ArgBool && a.Int != 0 {
				return false // accumulate
			}
		}
	}
	return true
}

// float8Arith lists the ops of float8Ops that compute in float, as CPU's
// kernels do: a float8_e5m2 NaN operand's payload is lost, as it is on CPU.
var float8Arith = map[string]bool{"addmm": true, "mean": true, "mm": true, "mul": true, "sum": true}

// float8Arithmetic reports whether op is one of float8Arith.
func float8Arithmetic(op string) bool {
	e, ok := Lookup(op)
	return ok && float8Arith[ruleBase(e.Rule)]
}

// float8Abs wraps the abs rule: CPU's float8 kernel negates what is below
// zero and keeps the rest as it is, so -0 and a NaN's sign survive.
func float8Abs(abs Fn) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		if !c.Meta(0).DType.IsFloat8() {
			return abs(c)
		}
		b, x := c.B, c.T(0)
		neg := b.Compare(hlo.LT, x, b.BroadcastTo(b.Scalar(x.T.Elem, 0), x.T.Shape))
		return []*hlo.Value{b.Select(neg, b.Neg(x), x)}, nil
	}
}

// computesFloat8 returns the float8 dtype the running op computes, or
// Undefined: its dtype argument's when the rule read one (DTypeArg), the
// destination's for copy, else that of its first float8 tensor argument
// that is no out= argument.
func (c *Ctx) computesFloat8() DType {
	if c.f8Known {
		return c.f8
	}
	c.f8, c.f8Known = Undefined, true
	if e, ok := Lookup(c.Op); ok && ruleBase(e.Rule) == "copy" {
		if d := c.Args[0].Tensors[0].DType; d.IsFloat8() {
			c.f8 = d
		}
		return c.f8
	}
	for _, a := range c.Args[:len(c.Args)-c.OutArgs] {
		if a.Kind != ArgTensor && a.Kind != ArgTensorList {
			continue
		}
		for _, m := range a.Tensors {
			if m.Defined && m.DType.IsFloat8() {
				c.f8 = m.DType
				return c.f8
			}
		}
	}
	return c.f8
}
