package engine

import (
	"testing"

	"torchtpu/dispatch"
)

// sigCall builds the arguments of one op call from tensors made by the test.
type sigCall struct {
	op   string
	args func(mk func(d dispatch.DType, sizes ...int64) *TensorDesc) []dispatch.Arg
}

func tArg(d *TensorDesc) dispatch.Arg { return tensorArg(d) }

func scalarD(v float64) dispatch.Arg { return dispatch.Arg{Kind: dispatch.ArgScalarDouble, Double: v} }

// sigBase is add.Tensor(a[2,3], b[2,3], alpha=1) on float32 tensors.
func sigBase(mk func(d dispatch.DType, sizes ...int64) *TensorDesc) []dispatch.Arg {
	return []dispatch.Arg{tArg(mk(dispatch.Float32, 2, 3)), tArg(mk(dispatch.Float32, 2, 3)), scalarD(1)}
}

// TestOpSignatureSeparatesCalls checks that calls differing in anything a
// rule reads get different signatures from the base call, and that the same
// call on other storages of the same geometry gets the base's signature.
func TestOpSignatureSeparatesCalls(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	mk := func(d dispatch.DType, sizes ...int64) *TensorDesc {
		n := numel(sizes)
		addr, err := e.Alloc(n*int64(d.Size()), 0)
		if err != nil {
			t.Fatal(err)
		}
		desc := &TensorDesc{Addr: addr, DType: d, Sizes: sizes, Strides: contiguousStrides(sizes)}
		if err := e.FromHost(desc, make([]byte, n*int64(d.Size()))); err != nil {
			t.Fatal(err)
		}
		return desc
	}
	sig := func(op string, args []dispatch.Arg) [2]uint64 {
		t.Helper()
		h, ok := e.opSignature(op, args, false)
		if !ok {
			t.Fatalf("%s: no signature", op)
		}
		return [2]uint64{h.Lo, h.Hi}
	}
	base := sig("aten::add.Tensor", sigBase(mk))
	if again := sig("aten::add.Tensor", sigBase(mk)); again != base {
		t.Fatal("the same call on new storages of the same geometry changed the signature")
	}
	with := func(i int, a dispatch.Arg) func(func(dispatch.DType, ...int64) *TensorDesc) []dispatch.Arg {
		return func(mk func(dispatch.DType, ...int64) *TensorDesc) []dispatch.Arg {
			args := sigBase(mk)
			args[i] = a
			return args
		}
	}
	view := func(mk func(dispatch.DType, ...int64) *TensorDesc, base []int64, off int64, sizes, strides []int64) dispatch.Arg {
		d := mk(dispatch.Float32, base...)
		return tArg(&TensorDesc{Addr: d.Addr, Offset: off, DType: d.DType, Sizes: sizes, Strides: strides})
	}
	cases := []struct {
		name string
		call sigCall
	}{
		{"op", sigCall{"aten::sub.Tensor", sigBase}},
		{"shape", sigCall{"aten::add.Tensor", func(mk func(dispatch.DType, ...int64) *TensorDesc) []dispatch.Arg {
			return []dispatch.Arg{tArg(mk(dispatch.Float32, 2, 3)), tArg(mk(dispatch.Float32, 3)), scalarD(1)}
		}}},
		{"dtype", sigCall{"aten::add.Tensor", func(mk func(dispatch.DType, ...int64) *TensorDesc) []dispatch.Arg {
			return []dispatch.Arg{tArg(mk(dispatch.Float32, 2, 3)), tArg(mk(dispatch.Float64, 2, 3)), scalarD(1)}
		}}},
		{"strides (a transposed view)", sigCall{"aten::add.Tensor", func(mk func(dispatch.DType, ...int64) *TensorDesc) []dispatch.Arg {
			return []dispatch.Arg{tArg(mk(dispatch.Float32, 2, 3)), view(mk, []int64{3, 2}, 0, []int64{2, 3}, []int64{1, 2}), scalarD(1)}
		}}},
		{"view offset", sigCall{"aten::add.Tensor", func(mk func(dispatch.DType, ...int64) *TensorDesc) []dispatch.Arg {
			return []dispatch.Arg{tArg(mk(dispatch.Float32, 2, 3)), view(mk, []int64{3, 3}, 3, []int64{2, 3}, []int64{3, 1}), scalarD(1)}
		}}},
		{"storage size behind the same view", sigCall{"aten::add.Tensor", func(mk func(dispatch.DType, ...int64) *TensorDesc) []dispatch.Arg {
			return []dispatch.Arg{tArg(mk(dispatch.Float32, 2, 3)), view(mk, []int64{3, 3}, 0, []int64{2, 3}, []int64{3, 1}), scalarD(1)}
		}}},
		{"scalar value", sigCall{"aten::add.Tensor", with(2, scalarD(2))}},
		{"scalar kind (int 1 for float 1.0)", sigCall{"aten::add.Tensor", with(2, dispatch.Arg{Kind: dispatch.ArgScalarInt, Int: 1})}},
		{"complex scalar", sigCall{"aten::add.Tensor", with(2, dispatch.Arg{Kind: dispatch.ArgScalarComplex, Double: 1, Doubles: []float64{1, 0.5}})}},
		{"complex scalar, other imaginary part", sigCall{"aten::add.Tensor", with(2, dispatch.Arg{Kind: dispatch.ArgScalarComplex, Double: 1, Doubles: []float64{1, 0.25}})}},
		{"optional argument absent", sigCall{"aten::add.Tensor", func(mk func(dispatch.DType, ...int64) *TensorDesc) []dispatch.Arg {
			return sigBase(mk)[:2]
		}}},
		{"None for the optional argument", sigCall{"aten::add.Tensor", with(2, dispatch.Arg{Kind: dispatch.ArgNone})}},
		{"aliasing (b is a)", sigCall{"aten::add.Tensor", func(mk func(dispatch.DType, ...int64) *TensorDesc) []dispatch.Arg {
			a := mk(dispatch.Float32, 2, 3)
			return []dispatch.Arg{tArg(a), tArg(a), scalarD(1)}
		}}},
		{"a wrapped number for b", sigCall{"aten::add.Tensor", with(1, tArg(&TensorDesc{DType: dispatch.Float64, CPU: true, Number: true, Host: make([]byte, 8)}))}},
		{"a CPU scalar of other bytes", sigCall{"aten::add.Tensor", with(1, tArg(&TensorDesc{DType: dispatch.Float64, CPU: true, Host: []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}}))}},
	}
	seen := map[[2]uint64]string{base: "base"}
	for _, c := range cases {
		s := sig(c.call.op, c.call.args(mk))
		if prev, dup := seen[s]; dup {
			t.Errorf("%s: same signature as %s", c.name, prev)
		}
		seen[s] = c.name
	}
	// Int lists, strings and dtype arguments, on ops that read them.
	sum := func(dims []int64, keep bool, dt dispatch.Arg) [2]uint64 {
		args := []dispatch.Arg{tArg(mk(dispatch.Float32, 2, 3)), {Kind: dispatch.ArgIntList, Ints: dims}, {Kind: dispatch.ArgBool, Int: map[bool]int64{false: 0, true: 1}[keep]}, dt}
		return sig("aten::sum.dim_IntList", args)
	}
	noDT := dispatch.Arg{Kind: dispatch.ArgNone}
	f64 := dispatch.Arg{Kind: dispatch.ArgInt, Int: int64(dispatch.Float64)}
	sums := map[[2]uint64]string{}
	for name, s := range map[string][2]uint64{
		"dims [0]": sum([]int64{0}, false, noDT), "dims [1]": sum([]int64{1}, false, noDT), "dims [0 1]": sum([]int64{0, 1}, false, noDT),
		"keepdim": sum([]int64{0}, true, noDT), "dtype float64": sum([]int64{0}, false, f64),
	} {
		if prev, dup := sums[s]; dup {
			t.Errorf("sum %s: same signature as %s", name, prev)
		}
		sums[s] = name
	}
	div := func(mode string) [2]uint64 {
		return sig("aten::div.Tensor_mode", []dispatch.Arg{tArg(mk(dispatch.Float32, 3)), tArg(mk(dispatch.Float32, 3)), {Kind: dispatch.ArgString, Str: mode}})
	}
	if div("floor") == div("trunc") {
		t.Error("div rounding modes floor and trunc share a signature")
	}
	// The fused path's signatures (pending=true) hash the storage state too,
	// so the same call never shares one with the strict path's.
	args := sigBase(mk)
	hs, _ := e.opSignature("aten::add.Tensor", args, false)
	hf, _ := e.opSignature("aten::add.Tensor", args, true)
	if hs == hf {
		t.Error("strict and fused signatures of the same call are equal")
	}
	// Memory layouts asked of the results are a part of the signature.
	e.layouts = [][]int64{{1, 0}}
	hl, _ := e.opSignature("aten::add.Tensor", args, false)
	e.layouts = nil
	if hl == hs {
		t.Error("a call asking for a permuted result layout shares the signature of the contiguous one")
	}
}
