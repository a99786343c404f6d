package dispatch

// Ops that compute on padded arguments as they are held (engine/pad_ops.go).
// A tensor grown by appends is held padded (padded.go); the ops below let
// what is computed from it stay padded too, so a decoding loop's masks and
// positions (an arange of the sequence length, comparisons, a padding mask
// indexed by key positions) compile once per capacity instead of once per
// length. Their rules are not changed: the engine hands them the padded
// arguments at their capacity and zeroes the result past the size.

// PadKind says how an op computes on padded arguments.
type PadKind int

// Pad kinds.
const (
	// PadNone: padded arguments are read at their size.
	PadNone PadKind = iota
	// PadElementwise: each result element reads only the arguments'
	// elements at its broadcast index; arguments not padded have size 1 in
	// the padded dimension. The result is padded along that dimension.
	PadElementwise
	// PadSum: a sum over some dimensions, to which zeros add nothing. A
	// result that keeps the padded dimension stays padded.
	PadSum
	// PadIndex: index.Tensor with an index tensor for every dimension of
	// its input, elementwise in the indices; a padded input is read as held
	// when its padded dimension's indices are known to lie below its size.
	PadIndex
	// PadCopy: copy_ into a storage never written, whole, of the padded
	// source's shape: the storage is held padded.
	PadCopy
	// PadSelect: index_select along a dimension other than the padded one
	// (a beam search reordering its key/value cache by beam): the result is
	// padded where its input is.
	PadSelect
	// PadGather: gather with a padded index whose values lie in the input's
	// range (known, or read by the op's index check): the result is padded
	// where the index is.
	PadGather
	// PadScatter: scatter of values or of a source padded where its index
	// is, into an input that is not padded: the positions past the size
	// repeat the first position's index and value, which writes nothing
	// new. The result is plain; the in-place ops write it to their input.
	PadScatter
	// PadEnd: constant_pad_nd with zeros at the end of the padded
	// dimension only, to a length that does not depend on the size (a
	// padding mask padded to a static cache's length): the result is plain.
	PadEnd
)

// padKinds lists the ops that are not PadNone.
var padKinds = map[string]PadKind{
	"aten::add.Tensor": PadElementwise, "aten::add.Scalar": PadElementwise,
	"aten::sub.Tensor": PadElementwise, "aten::sub.Scalar": PadElementwise,
	"aten::rsub.Tensor": PadElementwise, "aten::rsub.Scalar": PadElementwise,
	"aten::mul.Tensor": PadElementwise, "aten::mul.Scalar": PadElementwise,
	"aten::div.Tensor": PadElementwise, "aten::div.Scalar": PadElementwise,
	"aten::div.Tensor_mode": PadElementwise, "aten::div.Scalar_mode": PadElementwise,
	"aten::remainder.Tensor": PadElementwise, "aten::remainder.Scalar": PadElementwise,
	"aten::floor_divide": PadElementwise, "aten::floor_divide.Scalar": PadElementwise,
	"aten::pow.Tensor_Scalar": PadElementwise, "aten::exp": PadElementwise, "aten::log": PadElementwise,
	"aten::sign": PadElementwise,
	"aten::neg":  PadElementwise, "aten::abs": PadElementwise,
	"aten::maximum": PadElementwise, "aten::minimum": PadElementwise,
	"aten::eq.Tensor": PadElementwise, "aten::eq.Scalar": PadElementwise,
	"aten::ne.Tensor": PadElementwise, "aten::ne.Scalar": PadElementwise,
	"aten::lt.Tensor": PadElementwise, "aten::lt.Scalar": PadElementwise,
	"aten::le.Tensor": PadElementwise, "aten::le.Scalar": PadElementwise,
	"aten::gt.Tensor": PadElementwise, "aten::gt.Scalar": PadElementwise,
	"aten::ge.Tensor": PadElementwise, "aten::ge.Scalar": PadElementwise,
	"aten::bitwise_and.Tensor": PadElementwise, "aten::bitwise_and.Scalar": PadElementwise,
	"aten::bitwise_or.Tensor": PadElementwise, "aten::bitwise_or.Scalar": PadElementwise,
	"aten::bitwise_xor.Tensor": PadElementwise, "aten::bitwise_xor.Scalar": PadElementwise,
	"aten::bitwise_not": PadElementwise,
	"aten::logical_and": PadElementwise, "aten::logical_or": PadElementwise,
	"aten::logical_xor": PadElementwise, "aten::logical_not": PadElementwise,
	"aten::where.self":         PadElementwise,
	"aten::masked_fill.Scalar": PadElementwise, "aten::masked_fill.Tensor": PadElementwise,
	"aten::clone": PadElementwise,
	"aten::sum":   PadSum, "aten::sum.dim_IntList": PadSum,
	"aten::index.Tensor":    PadIndex,
	"aten::copy_":           PadCopy,
	"aten::index_select":    PadSelect,
	"aten::gather":          PadGather,
	"aten::constant_pad_nd": PadEnd,
	"aten::scatter.src":     PadScatter, "aten::scatter.value": PadScatter,
	"aten::scatter_.src": PadScatter, "aten::scatter_.value": PadScatter,
	"aten::clamp": PadElementwise, "aten::clamp_min": PadElementwise, "aten::clamp_max": PadElementwise,
	"aten::clamp.Tensor": PadElementwise, "aten::clamp_min.Tensor": PadElementwise,
	"aten::clamp_max.Tensor": PadElementwise,
}

// PadKindOf returns how op computes on padded arguments.
func PadKindOf(op string) PadKind { return padKinds[op] }

// PadsVariant reports whether an op of kind k computes on padded arguments
// in variant v: copy_ in place, scatter both ways, the others functional.
func PadsVariant(k PadKind, v Variant) bool {
	switch k {
	case PadNone:
		return false
	case PadCopy:
		return v == Inplace
	case PadScatter:
		return v == Functional || v == Inplace
	}
	return v == Functional
}
