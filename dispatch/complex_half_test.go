package dispatch

import (
	"testing"

	"torchtpu/hlo"
)

// TestComplexHalfResultDTypes checks which results of an op are complex32:
// those of an op whose inputs promote to complex32, or whose dtype argument
// is complex32, and never those of an op a wider input or out= argument
// would otherwise seem to decide.
func TestComplexHalfResultDTypes(t *testing.T) {
	h := newHarness(t)
	c64 := h.r.b.Param(hlo.T(hlo.C64, 3))
	f32 := h.r.b.Param(hlo.T(hlo.F32, 3))
	zeroDim := func(d DType) Arg {
		return Arg{Kind: ArgTensor, Tensors: []TensorMeta{{DType: d, Defined: true}}, Handles: []any{nil}}
	}
	cases := []struct {
		name       string
		args       []Arg
		outArgs    int
		c64, f32   DType // the dtypes of a complex64 and of a float32 result
		halfInputs bool
	}{
		{"two complex32 tensors", []Arg{h.tensor(ComplexHalf, 3), h.tensor(ComplexHalf, 3)}, 0, ComplexHalf, Float16, true},
		{"complex32 and float16", []Arg{h.tensor(ComplexHalf, 3), h.tensor(Float16, 3)}, 0, ComplexHalf, Float16, true},
		{"complex32 and a Python float", []Arg{h.tensor(ComplexHalf, 3), {Kind: ArgScalarDouble, Double: 2.5}}, 0, ComplexHalf, Float16, true},
		{"complex32 and a 0-dim complex64", []Arg{h.tensor(ComplexHalf, 3), zeroDim(Complex64)}, 0, ComplexHalf, Float16, true},
		{"complex32 and a float32 tensor", []Arg{h.tensor(ComplexHalf, 3), h.tensor(Float32, 3)}, 0, Complex64, Float32, false},
		{"complex32 and bfloat16", []Arg{h.tensor(ComplexHalf, 3), h.tensor(BFloat16, 3)}, 0, Complex64, Float32, false},
		{"complex32 list", []Arg{h.list(h.tensor(ComplexHalf, 3), h.tensor(ComplexHalf, 2))}, 0, ComplexHalf, Float16, true},
		{"complex32 into a complex64 out", []Arg{h.tensor(ComplexHalf, 3), h.tensor(Complex64, 3)}, 1, ComplexHalf, Float16, true},
		{"complex64 into a complex32 out", []Arg{h.tensor(Complex64, 3), h.tensor(ComplexHalf, 3)}, 1, Complex64, Float32, false},
		{"no tensors", []Arg{{Kind: ArgScalarDouble, Double: 1}}, 0, Complex64, Float32, false},
	}
	for _, tc := range cases {
		c := &Ctx{Op: "aten::add.Tensor", B: h.r.b, Args: tc.args, R: h.r, OutArgs: tc.outArgs}
		if got := c.ComputesComplexHalf(); got != tc.halfInputs {
			t.Errorf("%s: ComputesComplexHalf = %v, want %v", tc.name, got, tc.halfInputs)
		}
		if got := c.ResultDType(c64); got != tc.c64 {
			t.Errorf("%s: a complex64 result is %s, want %s", tc.name, got, tc.c64)
		}
		if got := c.ResultDType(f32); got != tc.f32 {
			t.Errorf("%s: a float32 result is %s, want %s", tc.name, got, tc.f32)
		}
		if got := c.ResultDType(h.r.b.Param(hlo.T(hlo.Pred, 3))); got != Bool {
			t.Errorf("%s: a bool result is %s", tc.name, got)
		}
	}
}

// TestComplexHalfDTypeArgument checks that a dtype argument decides for or
// against complex32, and that an op CPU has no complex32 kernel for runs on
// CPU when asked for one.
func TestComplexHalfDTypeArgument(t *testing.T) {
	h := newHarness(t)
	c64 := h.r.b.Param(hlo.T(hlo.C64, 3))
	dtype := func(d DType) Arg { return Arg{Kind: ArgInt, Int: int64(d)} }

	c := &Ctx{Op: "aten::linalg_vector_norm", Args: []Arg{h.tensor(ComplexHalf, 3), dtype(Complex64)}}
	if d, err := c.DTypeArg(1, Undefined); err != nil || d != Complex64 {
		t.Fatalf("DTypeArg = %s, %v", d, err)
	}
	if got := c.ResultDType(c64); got != Complex64 {
		t.Errorf("with dtype=complex64, a complex64 result is %s", got)
	}

	c = &Ctx{Op: "aten::linalg_vector_norm", Args: []Arg{h.tensor(Float16, 3), dtype(ComplexHalf)}}
	if d, err := c.DTypeArg(1, Undefined); err != nil || d != ComplexHalf {
		t.Fatalf("DTypeArg = %s, %v", d, err)
	}
	if got := c.ResultDType(c64); got != ComplexHalf {
		t.Errorf("with dtype=complex32, a complex64 result is %s", got)
	}

	c = &Ctx{Op: "aten::sum.dim_IntList", Args: []Arg{h.tensor(Float16, 3), dtype(ComplexHalf)}}
	if _, err := c.DTypeArg(1, Undefined); err != ErrRunOnCPU {
		t.Errorf("sum with dtype=complex32: err = %v, want ErrRunOnCPU", err)
	}
}

// TestComplexHalfOps checks the ops that run on tpu for complex32 tensors:
// every variant of one CPU implements, none of one it does not.
func TestComplexHalfOps(t *testing.T) {
	for op, want := range map[string]bool{
		"aten::add.Tensor": true, "aten::add_.Tensor": true, "aten::add.out": true, "aten::add.Scalar": true,
		"aten::copy_": true, "aten::index_put_": true, "aten::abs": true, "aten::exp": false, "aten::sum": false,
		"aten::div.Tensor": false, "aten::mm": false, "aten::no_such_op": false,
	} {
		if got := ComplexHalfOp(op); got != want {
			t.Errorf("ComplexHalfOp(%s) = %v, want %v", op, got, want)
		}
	}
	checkListedOpsHaveRules(t, "complexHalfOps", complexHalfOps)
	h := newHarness(t)
	half := []Arg{h.tensor(ComplexHalf, 3)}
	if AcceptsComplexHalf("aten::exp", half) || !AcceptsComplexHalf("aten::neg", half) {
		t.Errorf("AcceptsComplexHalf: exp runs on CPU and neg on tpu for complex32")
	}
	if !AcceptsComplexHalf("aten::exp", []Arg{h.tensor(Complex64, 3)}) {
		t.Errorf("AcceptsComplexHalf refuses exp of complex64")
	}
}

// checkListedOpsHaveRules fails t for each base name in a dtype's op list
// (float8Ops, complexHalfOps) that no rule has: such an entry does nothing.
func checkListedOpsHaveRules(t *testing.T, list string, ops map[string]bool) {
	t.Helper()
	bases := map[string]bool{}
	for _, n := range Names() {
		e, _ := Lookup(n)
		bases[ruleBase(e.Rule)] = true
	}
	for name := range ops {
		if !bases[name] {
			t.Errorf("%s names %s, which has no rule", list, name)
		}
	}
}
