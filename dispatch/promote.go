package dispatch

import "fmt"

// category orders dtypes the way PyTorch's promotion does: bool < integer <
// float < complex.
func category(d DType) int {
	switch {
	case d.IsComplex():
		return 3
	case d == Bool:
		return 0
	case d.IsIntegral(false):
		return 1
	case d.IsFloat():
		return 2
	}
	return -1
}

// PromoteTypes returns the smallest dtype both a and b convert to without
// losing category, as torch.promote_types does. Like PyTorch, it refuses to
// promote a float8 type with any other type, and uint16, uint32 and uint64
// with any other type but a float: it panics with a PromotionError, which
// the engine raises as the op's error.
func PromoteTypes(a, b DType) DType {
	if a == Undefined {
		return b
	}
	if b == Undefined || a == b {
		return a
	}
	if a.IsFloat8() || b.IsFloat8() {
		panic(PromotionError{a, b})
	}
	if a.isBarebonesUnsigned() || b.isBarebonesUnsigned() {
		if a.IsFloat() {
			return a
		}
		if b.IsFloat() {
			return b
		}
		panic(PromotionError{a, b})
	}
	ca, cb := category(a), category(b)
	if ca == 3 || cb == 3 {
		// Complex wins; its parts are as wide as the widest float involved.
		ra, rb := a, b
		if ca == 3 {
			ra = a.ToReal()
		}
		if cb == 3 {
			rb = b.ToReal()
		}
		if ca < 2 {
			return b
		}
		if cb < 2 {
			return a
		}
		return PromoteTypes(ra, rb).ToComplex()
	}
	if ca != cb {
		if ca > cb {
			return a
		}
		return b
	}
	if ca == 2 {
		if (a == Float16 && b == BFloat16) || (a == BFloat16 && b == Float16) {
			return Float32
		}
		if a.Size() >= b.Size() {
			return a
		}
		return b
	}
	// Integers: uint8 with a signed type needs a wider signed type.
	if a == Uint8 || b == Uint8 {
		other := a
		if a == Uint8 {
			other = b
		}
		if other == Int8 {
			return Int16
		}
		return other
	}
	if a.Size() >= b.Size() {
		return a
	}
	return b
}

// isBarebonesUnsigned reports the unsigned types wider than a byte, which
// PyTorch holds without arithmetic promotion rules.
func (d DType) isBarebonesUnsigned() bool { return d == UInt16 || d == UInt32 || d == UInt64 }

// PromotionError is PyTorch's refusal to promote a float8 or barebones
// unsigned type with another type.
type PromotionError struct{ A, B DType }

// Error returns CPU's message.
func (e PromotionError) Error() string {
	if e.A.IsFloat8() || e.B.IsFloat8() {
		return fmt.Sprintf("Promotion for Float8 Types is not supported, attempted to promote %s and %s",
			scalarTypeName(e.A), scalarTypeName(e.B))
	}
	return fmt.Sprintf("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote %s and %s",
		scalarTypeName(e.A), scalarTypeName(e.B))
}

// Operand kinds of result-type computation, in PyTorch's priority order.
const (
	KindDim     = iota // a tensor with at least one dimension
	KindZeroDim        // a zero-dimensional tensor
	KindWrapped        // a Python number
)

// Operand is one input of ResultType.
type Operand struct {
	DType DType
	Kind  int
}

// ResultType computes torch.result_type over operands: dimensioned tensors
// win over zero-dimensional ones, which win over Python numbers, except that a
// lower-priority operand of a higher category lifts the result to its category
// (a Python float with an integer tensor gives the default float dtype).
func ResultType(ops ...Operand) DType {
	state := [3]DType{Undefined, Undefined, Undefined}
	for _, o := range ops {
		d := o.DType
		if o.Kind == KindWrapped {
			switch {
			case d.IsComplex():
				d = DefaultFloat().ToComplex() // the default complex dtype
			case d.IsFloat():
				d = DefaultFloat()
			case d.IsIntegral(false):
				d = Int64
			}
		}
		state[o.Kind] = PromoteTypes(state[o.Kind], d)
	}
	return combine(combine(state[KindDim], state[KindZeroDim]), state[KindWrapped])
}

func combine(higher, lower DType) DType {
	if higher == Undefined {
		return lower
	}
	if lower == Undefined {
		return higher
	}
	if higher.IsComplex() {
		return higher
	}
	if lower.IsComplex() {
		// A float keeps its precision and becomes complex.
		if higher.IsFloat() {
			return higher.ToComplex()
		}
		return lower
	}
	if category(higher) >= category(lower) {
		return higher
	}
	return PromoteTypes(higher, lower)
}

// CanCast reports whether a result of dtype from may be written to dtype to
// (PyTorch's canCast: no complex to non-complex, no float to integral, no non-bool to bool).
func CanCast(from, to DType) bool {
	if from.IsComplex() && !to.IsComplex() {
		return false
	}
	if from.IsFloat() && to.IsIntegral(true) {
		return false
	}
	if from != Bool && to == Bool {
		return false
	}
	return true
}
