package dispatch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"torchtpu/hlo"
)

// fakeReader resolves tensor handles (builder parameters) to themselves,
// makes numbers constants and serves index values from a map.
type fakeReader struct {
	b    *hlo.Builder
	ints map[*hlo.Value][]int64
}

func (r *fakeReader) Read(h any) *hlo.Value { return h.(*hlo.Value) }

func (r *fakeReader) Scalar(v float64, e hlo.Elem) *hlo.Value { return r.b.Scalar(e, v) }

func (r *fakeReader) Seed(arg int, v int64) *hlo.Value         { return r.b.ConstantInt(hlo.T(hlo.S64), v) }
func (r *fakeReader) IntNumber(v int64, e hlo.Elem) *hlo.Value { return r.b.ConstantInt(hlo.T(e), v) }

func (r *fakeReader) Int64Values(v *hlo.Value) ([]int64, error) {
	return make([]int64, v.T.NumElements()), nil
}

func (r *fakeReader) Int64Tensor(vals []int64, shape []int64) *hlo.Value {
	return r.b.Param(hlo.T(hlo.S64, shape...))
}

func (r *fakeReader) Int64s(h any) ([]int64, error) {
	v := h.(*hlo.Value)
	if xs, ok := r.ints[v]; ok {
		return xs, nil
	}
	return make([]int64, v.T.NumElements()), nil
}

type harness struct {
	t *testing.T
	r *fakeReader
}

func newHarness(t *testing.T) *harness {
	b := hlo.NewBuilder()
	return &harness{t: t, r: &fakeReader{b: b, ints: map[*hlo.Value][]int64{}}}
}

func (h *harness) tensor(d DType, sizes ...int64) Arg {
	m := TensorMeta{Sizes: append([]int64{}, sizes...), DType: d, Defined: true}
	return Arg{Kind: ArgTensor, Tensors: []TensorMeta{m}, Handles: []any{h.r.b.Param(m.Type())}}
}

// index is an int64 tensor whose values the reader reports.
func (h *harness) index(vals []int64, sizes ...int64) Arg {
	a := h.tensor(Int64, sizes...)
	h.r.ints[a.Handles[0].(*hlo.Value)] = vals
	return a
}

func (h *harness) list(ts ...Arg) Arg {
	a := Arg{Kind: ArgTensorList}
	for _, t := range ts {
		a.Tensors = append(a.Tensors, t.Tensors...)
		a.Handles = append(a.Handles, t.Handles...)
	}
	return a
}

func intArg(v int64) Arg { return Arg{Kind: ArgInt, Int: v} }
func boolArg(v bool) Arg {
	a := Arg{Kind: ArgBool}
	if v {
		a.Int = 1
	}
	return a
}
func floatArg(v float64) Arg { return Arg{Kind: ArgScalarDouble, Double: v} }
func intsArg(v ...int64) Arg { return Arg{Kind: ArgIntList, Ints: v} }
func dtypeArg(d DType) Arg   { return Arg{Kind: ArgInt, Int: int64(d)} }
func strArg(s string) Arg    { return Arg{Kind: ArgString, Str: s} }
func scalarInt(v int64) Arg  { return Arg{Kind: ArgScalarInt, Int: v} }

var none = Arg{Kind: ArgNone}

// call runs the functional rule of name and prints the module of its
// results, so malformed graphs panic here.
func (h *harness) call(name string, args ...Arg) ([]*hlo.Value, error) {
	h.t.Helper()
	e, ok := Lookup(name)
	if !ok {
		h.t.Fatalf("no rule for %s", name)
	}
	c := &Ctx{Op: name, B: h.r.b, Args: args, R: h.r}
	var outs []*hlo.Value
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				h.t.Fatalf("%s panicked: %v", name, p)
			}
		}()
		outs, err = e.Rule.Fn(c)
		if err == nil {
			h.r.b.Module(outs)
		}
	}()
	return outs, err
}

// types formats result types as "2x5xf32, i64".
func types(vs []*hlo.Value) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		s := v.T.String()
		parts[i] = strings.TrimSuffix(strings.TrimPrefix(s, "tensor<"), ">")
	}
	return strings.Join(parts, ", ")
}

type ruleCase struct {
	op   string
	args func(h *harness) []Arg
	want string // result types, or "error: <substring>"
}

func runCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for i, c := range cases {
		h := newHarness(t)
		outs, err := h.call(c.op, c.args(h)...)
		label := fmt.Sprintf("#%d %s", i, c.op)
		if want, ok := strings.CutPrefix(c.want, "error: "); ok {
			if assert.Error(t, err, "%s: got %s, want an error", label, types(outs)) {
				assert.Contains(t, err.Error(), want, label)
			}
			continue
		}
		if assert.NoError(t, err, label) {
			assert.Equal(t, c.want, types(outs), "%s: result types", label)
		}
	}
}

func TestMatmulRules(t *testing.T) {
	f32 := func(h *harness, s ...int64) Arg { return h.tensor(Float32, s...) }
	runCases(t, []ruleCase{
		{"aten::mm", func(h *harness) []Arg { return []Arg{f32(h, 2, 3), f32(h, 3, 5)} }, "2x5xf32"},
		{"aten::mm", func(h *harness) []Arg { return []Arg{f32(h, 2, 3), f32(h, 4, 5)} },
			"error: mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"},
		{"aten::mm", func(h *harness) []Arg { return []Arg{f32(h, 2, 3), h.tensor(Float64, 3, 5)} },
			"error: expected m1 and m2 to have the same dtype, but got: float != double"},
		{"aten::mm", func(h *harness) []Arg { return []Arg{f32(h, 3), f32(h, 3, 5)} }, "error: self must be a matrix"},
		{"aten::mm", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 2, 3), h.tensor(Int64, 3, 5)} }, "2x5xi64"},
		{"aten::mm", func(h *harness) []Arg { return []Arg{h.tensor(Bool, 2, 3), h.tensor(Bool, 3, 5)} },
			"error: not implemented for 'Bool'"},
		{"aten::bmm", func(h *harness) []Arg { return []Arg{f32(h, 4, 2, 3), f32(h, 4, 3, 5)} }, "4x2x5xf32"},
		{"aten::bmm", func(h *harness) []Arg { return []Arg{f32(h, 4, 2, 3), f32(h, 4, 4, 5)} },
			"error: Expected size for first two dimensions of batch2 tensor to be: [4, 3] but got: [4, 4]."},
		{"aten::bmm", func(h *harness) []Arg { return []Arg{f32(h, 2, 3), f32(h, 4, 3, 5)} }, "error: batch1 must be a 3D tensor"},
		{"aten::addmm", func(h *harness) []Arg {
			return []Arg{f32(h, 5), f32(h, 2, 3), f32(h, 3, 5), floatArg(0.5), floatArg(2)}
		}, "2x5xf32"},
		{"aten::addmm", func(h *harness) []Arg { return []Arg{f32(h, 3), f32(h, 2, 3), f32(h, 3, 5)} },
			"error: The expanded size of the tensor (5) must match the existing size (3) at non-singleton dimension 1"},
		{"aten::addmm", func(h *harness) []Arg { return []Arg{h.tensor(Float64, 5), f32(h, 2, 3), f32(h, 3, 5)} },
			"error: self and mat2 must have the same dtype, but got Double and Float"},
		{"aten::baddbmm", func(h *harness) []Arg { return []Arg{f32(h, 1, 5), f32(h, 2, 2, 3), f32(h, 2, 3, 5)} }, "2x2x5xf32"},
		{"aten::mv", func(h *harness) []Arg { return []Arg{f32(h, 2, 3), f32(h, 3)} }, "2xf32"},
		{"aten::mv", func(h *harness) []Arg { return []Arg{f32(h, 2, 3), f32(h, 4)} },
			"error: size mismatch, got input (2), mat (2x3), vec (4)"},
		{"aten::addmv", func(h *harness) []Arg { return []Arg{f32(h, 2), f32(h, 2, 3), f32(h, 3)} }, "2xf32"},
		{"aten::dot", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 3), h.tensor(Int32, 3)} }, "i32"},
		{"aten::dot", func(h *harness) []Arg { return []Arg{f32(h, 3, 1), f32(h, 3)} },
			"error: 1D tensors expected, but got 2D and 1D tensors"},
		{"aten::dot", func(h *harness) []Arg { return []Arg{f32(h, 3), f32(h, 4)} },
			"error: inconsistent tensor size, expected tensor [3] and src [4]"},
	})
}

func TestReduceRules(t *testing.T) {
	x := func(h *harness) Arg { return h.tensor(Float32, 2, 3) }
	runCases(t, []ruleCase{
		{"aten::sum", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 2, 3)} }, "i64"},
		{"aten::sum", func(h *harness) []Arg { return []Arg{h.tensor(Bool, 2, 3)} }, "i64"},
		{"aten::sum", func(h *harness) []Arg { return []Arg{h.tensor(Float16, 2, 3)} }, "f16"},
		{"aten::sum", func(h *harness) []Arg { return []Arg{x(h), dtypeArg(Int32)} }, "i32"},
		{"aten::sum.dim_IntList", func(h *harness) []Arg { return []Arg{x(h), intsArg(-1), boolArg(true)} }, "2x1xf32"},
		{"aten::sum.dim_IntList", func(h *harness) []Arg { return []Arg{x(h), intsArg(), boolArg(false)} }, "f32"},
		{"aten::sum.dim_IntList", func(h *harness) []Arg { return []Arg{x(h), none, boolArg(true)} }, "1x1xf32"},
		{"aten::sum.dim_IntList", func(h *harness) []Arg { return []Arg{x(h), intsArg(2)} },
			"error: Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
		{"aten::sum.dim_IntList", func(h *harness) []Arg { return []Arg{x(h), intsArg(1, -1)} },
			"error: dim 1 appears multiple times in the list of dims"},
		{"aten::sum.dim_IntList", func(h *harness) []Arg { return []Arg{h.tensor(Float32), intsArg(0)} }, "f32"},
		{"aten::mean", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 2)} },
			"error: mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"},
		{"aten::mean", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 2), dtypeArg(Float64)} }, "f64"},
		{"aten::mean.dim", func(h *harness) []Arg { return []Arg{h.tensor(BFloat16, 2, 3), intsArg(0), boolArg(true)} }, "1x3xbf16"},
		{"aten::amax", func(h *harness) []Arg { return []Arg{x(h), intsArg()} }, "f32"},
		{"aten::amin", func(h *harness) []Arg { return []Arg{x(h), intsArg(0)} }, "3xf32"},
		{"aten::amax", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 0), intsArg(1)} },
			"error: amax(): Expected reduction dim 1 to have non-zero size."},
		{"aten::amax", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 0), intsArg(0)} }, "0xf32"},
		{"aten::max", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 0)} },
			"error: max(): Expected reduction dim to be specified for input.numel() == 0."},
		{"aten::max", func(h *harness) []Arg { return []Arg{h.tensor(Bool, 4)} }, "i1"},
		{"aten::max.dim", func(h *harness) []Arg { return []Arg{x(h), intArg(1), boolArg(true)} }, "2x1xf32, 2x1xi64"},
		{"aten::min.dim", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 2, 3), intArg(0)} }, "3xi32, 3xi64"},
		{"aten::max.dim", func(h *harness) []Arg { return []Arg{h.tensor(Float32), intArg(0)} }, "f32, i64"},
		{"aten::argmax", func(h *harness) []Arg { return []Arg{x(h), none, boolArg(true)} }, "1x1xi64"},
		{"aten::argmax", func(h *harness) []Arg { return []Arg{x(h)} }, "i64"},
		{"aten::argmin", func(h *harness) []Arg { return []Arg{x(h), intArg(1), boolArg(true)} }, "2x1xi64"},
		{"aten::argmin", func(h *harness) []Arg { return []Arg{x(h), intArg(-2)} }, "3xi64"},
		{"aten::argmax", func(h *harness) []Arg { return []Arg{h.tensor(Bool, 3)} }, "error: argmax(): does not support bool input"},
		{"aten::prod", func(h *harness) []Arg { return []Arg{h.tensor(Bool, 3)} }, "i64"},
		{"aten::prod.dim_int", func(h *harness) []Arg { return []Arg{h.tensor(Float16, 2, 3), intArg(1)} }, "2xf16"},
		{"aten::all", func(h *harness) []Arg { return []Arg{x(h)} }, "i1"},
		{"aten::any", func(h *harness) []Arg { return []Arg{h.tensor(Uint8, 2)} }, "ui8"},
		{"aten::all.dims", func(h *harness) []Arg { return []Arg{x(h), intsArg()} }, "2x3xi1"},
		{"aten::all.dims", func(h *harness) []Arg { return []Arg{x(h), none} }, "i1"},
		{"aten::any.dim", func(h *harness) []Arg { return []Arg{x(h), intArg(0), boolArg(true)} }, "1x3xi1"},
		{"aten::var.correction", func(h *harness) []Arg { return []Arg{x(h), intsArg(1), floatArg(0), boolArg(true)} }, "2x1xf32"},
		{"aten::std", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 3)} },
			"error: std and var only support floating point and complex dtypes"},
	})
}

func TestCompareRules(t *testing.T) {
	runCases(t, []ruleCase{
		{"aten::eq.Scalar", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 2, 3), floatArg(2.5)} }, "2x3xi1"},
		{"aten::lt.Tensor", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3), h.tensor(Int64, 2, 1)} }, "2x3xi1"},
		{"aten::lt.Tensor", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3), h.tensor(Float32, 4)} },
			"error: size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"},
		{"aten::logical_xor", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 3), h.tensor(Float32, 3)} }, "3xi1"},
		{"aten::where.self", func(h *harness) []Arg {
			return []Arg{h.tensor(Bool, 2, 1), h.tensor(Int32, 3), h.tensor(Float64, 1)}
		}, "2x3xf64"},
		{"aten::where.self", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 3), h.tensor(Float32, 3), h.tensor(Float32, 3)}
		}, "error: where expected condition to be a boolean tensor, but got a tensor with dtype Float"},
		{"aten::where.Scalar", func(h *harness) []Arg { return []Arg{h.tensor(Bool, 3), scalarInt(1), scalarInt(2)} }, "3xi64"},
		{"aten::where.ScalarOther", func(h *harness) []Arg { return []Arg{h.tensor(Uint8, 3), h.tensor(Int32, 3), floatArg(2.5)} }, "3xf32"},
		{"aten::clamp", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 3), floatArg(0.5), none} }, "3xf32"},
		{"aten::clamp", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 3), scalarInt(0), scalarInt(2)} }, "3xi32"},
		{"aten::clamp", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3), none, none} },
			"error: torch.clamp: At least one of 'min' or 'max' must not be None"},
		{"aten::clamp.Tensor", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 2, 3), h.tensor(Float32, 3), none} }, "2x3xf32"},
		{"aten::clamp_max.Tensor", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 3), h.tensor(Float64)} }, "3xf64"},
	})
}

func TestUnaryRules(t *testing.T) {
	runCases(t, []ruleCase{
		{"aten::exp", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 3)} }, "3xf32"},
		{"aten::sqrt", func(h *harness) []Arg { return []Arg{h.tensor(Bool, 3)} }, "3xf32"},
		{"aten::log2", func(h *harness) []Arg { return []Arg{h.tensor(Float16, 3)} }, "3xf16"},
		{"aten::erf", func(h *harness) []Arg { return []Arg{h.tensor(Float64, 3)} }, "3xf64"},
		{"aten::erf", func(h *harness) []Arg { return []Arg{h.tensor(BFloat16, 3)} }, "3xbf16"},
		{"aten::neg", func(h *harness) []Arg { return []Arg{h.tensor(Bool, 3)} },
			"error: Negation, the `-` operator, on a bool tensor is not supported."},
		{"aten::neg", func(h *harness) []Arg { return []Arg{h.tensor(Uint8, 3)} }, "3xui8"},
		{"aten::abs", func(h *harness) []Arg { return []Arg{h.tensor(Int16, 3)} }, "3xi16"},
		{"aten::relu", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 3)} }, "3xi64"},
		{"aten::floor", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 3)} }, "3xi64"},
		{"aten::floor", func(h *harness) []Arg { return []Arg{h.tensor(Bool, 3)} }, "error: \"floor_vml_cpu\" not implemented for 'Bool'"},
		{"aten::round.decimals", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3), intArg(-2)} }, "3xf32"},
		{"aten::sign", func(h *harness) []Arg { return []Arg{h.tensor(Bool, 3)} }, "3xi1"},
		{"aten::sign", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3)} }, "3xf32"},
		{"aten::logical_not", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3)} }, "3xi1"},
		{"aten::bitwise_not", func(h *harness) []Arg { return []Arg{h.tensor(Float16, 3)} }, "error: \"bitwise_not_cpu\" not implemented for 'Half'"},
		{"aten::isnan", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 3)} }, "3xi1"},
		{"aten::isinf", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3)} }, "3xi1"},
		{"aten::nan_to_num", func(h *harness) []Arg { return []Arg{h.tensor(BFloat16, 3), none, none, none} }, "3xbf16"},
		{"aten::gelu", func(h *harness) []Arg { return []Arg{h.tensor(Float16, 3), strArg("tanh")} }, "3xf16"},
		{"aten::gelu", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3), strArg("foo")} },
			"error: approximate argument must be either none or tanh."},
		{"aten::silu", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 3)} }, "error: \"silu_cpu\" not implemented for 'Int'"},
		{"aten::hardtanh", func(h *harness) []Arg { return []Arg{h.tensor(Uint8, 3), scalarInt(-1), scalarInt(1)} }, "3xui8"},
		{"aten::leaky_relu", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3), floatArg(0.2)} }, "3xf32"},
		{"aten::elu", func(h *harness) []Arg { return []Arg{h.tensor(Float16, 3)} }, "3xf16"},
	})
}

func TestSoftmaxRules(t *testing.T) {
	runCases(t, []ruleCase{
		{"aten::_softmax", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 3), intArg(-1), boolArg(false)} }, "2x3xf32"},
		{"aten::_softmax", func(h *harness) []Arg { return []Arg{h.tensor(Float16, 2, 3), intArg(1), boolArg(true)} }, "2x3xf32"},
		{"aten::_log_softmax", func(h *harness) []Arg { return []Arg{h.tensor(Float32), intArg(0), boolArg(false)} }, "f32"},
		{"aten::_log_softmax", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 3), intArg(0), boolArg(false)} },
			"error: \"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'"},
		{"aten::_softmax", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 3), intArg(2), boolArg(false)} },
			"error: Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
		{"aten::_softmax_backward_data", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 2, 3), h.tensor(Float32, 2, 3), intArg(1), dtypeArg(Float16)}
		}, "2x3xf16"},
		{"aten::_log_softmax_backward_data", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 2, 3), h.tensor(Float32, 3, 2), intArg(1), dtypeArg(Float32)}
		}, "error: Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 'output'"},
	})
}

func TestShapeOpRules(t *testing.T) {
	runCases(t, []ruleCase{
		{"aten::cat", func(h *harness) []Arg {
			return []Arg{h.list(h.tensor(Float32, 2, 3), h.tensor(Float32, 3, 3)), intArg(1)}
		}, "error: Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the list."},
		{"aten::cat", func(h *harness) []Arg {
			return []Arg{h.list(h.tensor(Int32, 2, 3), h.tensor(Float64, 1, 3), h.tensor(Float32, 0)), intArg(0)}
		}, "3x3xf64"},
		{"aten::cat", func(h *harness) []Arg {
			return []Arg{h.list(h.tensor(Float32, 0), h.tensor(Float32, 2, 3)), intArg(-1)}
		}, "2x3xf32"},
		{"aten::cat", func(h *harness) []Arg { return []Arg{h.list(h.tensor(Float32, 2, 3), h.tensor(Float32)), intArg(0)} },
			"error: zero-dimensional tensor (at position 1) cannot be concatenated"},
		{"aten::index_select", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 3, 4), intArg(1), h.index([]int64{0, 3}, 2)}
		}, "3x2xf32"},
		{"aten::index_select", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 3, 4), intArg(0), h.index([]int64{5}, 1)}
		}, "error: index out of range in self"},
		{"aten::gather", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 3, 4), intArg(1), h.index([]int64{0, 1, 2, 3}, 2, 2)}
		}, "2x2xf32"},
		{"aten::gather", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 3, 4), intArg(0), h.index([]int64{5}, 1, 1)}
		}, "error: index 5 is out of bounds for dimension 0 with size 3"},
		{"aten::scatter.src", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 3, 4), intArg(0), h.index([]int64{0, 2}, 1, 2), h.tensor(Float32, 2, 4)}
		}, "3x4xf32"},
		{"aten::scatter.value", func(h *harness) []Arg {
			return []Arg{h.tensor(Int32, 3, 4), intArg(1), h.index([]int64{0, 2}, 2, 1), floatArg(1)}
		}, "3x4xi32"},
		{"aten::scatter_add", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 3, 4), intArg(0), h.index([]int64{1, 1}, 1, 2), h.tensor(Float64, 1, 2)}
		}, "error: scatter_add(): Expected self.dtype to be equal to src.dtype"},
		{"aten::flip", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 3), intsArg(0, -1)} }, "2x3xf32"},
		{"aten::roll", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 3), intsArg(4), intsArg()} }, "2x3xf32"},
		{"aten::roll", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 3), intsArg(1, 2), intsArg(0)} },
			"error: shifts and dimensions must align. shifts: 2, dims:1"},
		{"aten::tril", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 3, 4), intArg(-1)} }, "2x3x4xf32"},
		{"aten::triu", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3)} }, "error: triu: input tensor must have at least 2 dimensions"},
		{"aten::constant_pad_nd", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 3), intsArg(1, 2, -1, 0), floatArg(1)} }, "1x6xf32"},
		{"aten::constant_pad_nd", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 3), intsArg(1, 2, 3)} },
			"error: Length of pad must be even but instead it equals 3"},
		{"aten::masked_fill.Scalar", func(h *harness) []Arg {
			return []Arg{h.tensor(Int32, 2, 3), h.tensor(Bool, 3), floatArg(2.5)}
		}, "2x3xi32"},
		{"aten::masked_fill.Tensor", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 2, 3), h.tensor(Bool, 3), h.tensor(Float32, 2)}
		}, "error: masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."},
		{"aten::masked_fill.Scalar", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 2, 3), h.tensor(Float32, 3), floatArg(1)}
		}, "error: masked_fill_ only supports boolean masks, but got mask with dtype float"},
	})
}

// TestDerivedNames checks that in-place and out= names resolve to the
// functional rules under PyTorch's overload names.
func TestDerivedNames(t *testing.T) {
	cases := map[string]Variant{
		"aten::sum.IntList_out":     OutVariant,
		"aten::mean.out":            OutVariant,
		"aten::mean.dtype_out":      OutVariant,
		"aten::max.dim_max":         OutVariant,
		"aten::max.unary_out":       OutVariant,
		"aten::prod.int_out":        OutVariant,
		"aten::all.all_out":         OutVariant,
		"aten::eq.Tensor_out":       OutVariant,
		"aten::where.self_out":      OutVariant,
		"aten::clamp.Tensor_out":    OutVariant,
		"aten::round.decimals_out":  OutVariant,
		"aten::addmm_":              Inplace,
		"aten::clamp_":              Inplace,
		"aten::clamp_min_.Tensor":   Inplace,
		"aten::eq_.Scalar":          Inplace,
		"aten::masked_fill_.Scalar": Inplace,
		"aten::scatter_.src":        Inplace,
		"aten::tril_":               Inplace,
		"aten::exp_":                Inplace,
	}
	for name, v := range cases {
		e, ok := Lookup(name)
		if !ok {
			t.Errorf("%s: not in the table", name)
		} else if e.Variant != v {
			t.Errorf("%s: variant %d, want %d", name, e.Variant, v)
		}
	}
	if e, _ := Lookup("aten::max.out"); e.Rule == nil || e.Rule.Name != "aten::max.other" {
		t.Errorf("aten::max.out should be max.other's out variant")
	}
	if e, _ := Lookup("aten::var.out"); e.Rule == nil || e.Rule.Name != "aten::var.dim" {
		t.Errorf("aten::var.out should be var.dim's out variant")
	}
}
