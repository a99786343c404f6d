package dispatch

import "testing"

func TestRandomRules(t *testing.T) {
	seed := intArg(42)
	runCases(t, []ruleCase{
		{"aten::uniform", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 3), floatArg(-1), floatArg(1), seed} }, "2x3xf32"},
		{"aten::uniform", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2), floatArg(2), floatArg(1), seed} }, "error: uniform_ expects to return a [from, to) range"},
		{"aten::uniform", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 2), floatArg(0), floatArg(1), seed} }, "error: not implemented for 'Long'"},
		{"aten::normal_functional", func(h *harness) []Arg { return []Arg{h.tensor(BFloat16), floatArg(0), floatArg(1), seed} }, "bf16"},
		{"aten::normal_functional", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2), floatArg(0), floatArg(-1), seed} }, "error: normal expects std >= 0.0"},
		{"aten::normal.Tensor_Tensor", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3, 1), h.tensor(Float32, 4), seed} }, "3x4xf32"},
		{"aten::bernoulli.p", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 5), floatArg(0.5), seed} }, "5xi64"},
		{"aten::bernoulli.p", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 5), floatArg(1.5), seed} }, "error: bernoulli_ expects p to be in [0, 1]"},
		{"aten::bernoulli.Tensor", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 5), h.tensor(Float64, 5), seed} }, "2x5xf32"},
		{"aten::random.from", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 4), intArg(-3), intArg(9), seed} }, "4xi32"},
		{"aten::random.from", func(h *harness) []Arg { return []Arg{h.tensor(Int32, 4), intArg(9), intArg(9), seed} }, "error: random_ expects 'from' to be less than 'to'"},
		{"aten::random.to", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 4), intArg(9), seed} }, "4xf32"},
		{"aten::random", func(h *harness) []Arg { return []Arg{h.tensor(Uint8, 0), seed} }, "0xui8"},
		{"aten::randperm.generator_out", func(h *harness) []Arg { return []Arg{intArg(7), seed, h.tensor(Int64, 7)} }, "7xi64"},
		{"aten::randperm.generator_out", func(h *harness) []Arg { return []Arg{intArg(300), seed, h.tensor(Int8, 300)} }, "error: value cannot be converted to type int8_t without overflow"},
		{"aten::native_dropout", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3, 2), floatArg(0.3), boolArg(true), seed} }, "3x2xf32, 3x2xi1"},
		{"aten::native_dropout", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3), floatArg(0.3), boolArg(false), seed} }, "3xf32, 3xi1"},
		{"aten::native_dropout_backward", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3), h.tensor(Bool, 3), floatArg(2)} }, "3xf32"},
		{"aten::exponential", func(h *harness) []Arg { return []Arg{h.tensor(Float64, 3), floatArg(0), seed} }, "error: exponential_ expects lambda > 0.0"},
	})
}

func TestForeachAndOptimRules(t *testing.T) {
	dl := func(v ...float64) Arg { return Arg{Kind: ArgDoubleList, Doubles: v} }
	runCases(t, []ruleCase{
		{"aten::_foreach_add.List", func(h *harness) []Arg {
			return []Arg{h.list(h.tensor(Float32, 2), h.tensor(Float32, 3)), h.list(h.tensor(Float32, 2), h.tensor(Float32, 3)), floatArg(2)}
		}, "2xf32, 3xf32"},
		{"aten::_foreach_add.List", func(h *harness) []Arg {
			return []Arg{h.list(h.tensor(Float32, 2), h.tensor(Float32, 3)), h.list(h.tensor(Float32, 2)), floatArg(2)}
		}, "error: Tensor lists must have the same number of tensors, got 2 and 1"},
		{"aten::_foreach_mul.ScalarList", func(h *harness) []Arg { return []Arg{h.list(h.tensor(Float32, 2), h.tensor(Int64, 3)), dl(0.5, 2)} }, "2xf32, 3xf32"},
		{"aten::_foreach_div.Tensor", func(h *harness) []Arg { return []Arg{h.list(h.tensor(Float32, 2)), h.tensor(Float32)} }, "2xf32"},
		{"aten::_foreach_addcdiv.Tensor", func(h *harness) []Arg {
			return []Arg{h.list(h.tensor(Float32, 2), h.tensor(Float32, 4)), h.list(h.tensor(Float32, 2), h.tensor(Float32, 4)), h.list(h.tensor(Float32, 2), h.tensor(Float32, 4)), h.tensor(Float32, 2)}
		}, "2xf32, 4xf32"},
		{"aten::_foreach_lerp.Scalar", func(h *harness) []Arg {
			return []Arg{h.list(h.tensor(Float32, 2)), h.list(h.tensor(Float32, 2)), floatArg(0.1)}
		}, "2xf32"},
		{"aten::_foreach_norm.Scalar", func(h *harness) []Arg {
			return []Arg{h.list(h.tensor(Float32, 2, 3), h.tensor(BFloat16, 4)), floatArg(2), none}
		}, "f32, bf16"},
		{"aten::_foreach_sqrt", func(h *harness) []Arg { return []Arg{h.list(h.tensor(Float32, 2))} }, "2xf32"},
		{"aten::_foreach_zero", func(h *harness) []Arg { return []Arg{h.list(h.tensor(Int32, 2))} }, "2xi32"},
		{"aten::addcdiv", func(h *harness) []Arg {
			return []Arg{h.tensor(Int64, 2), h.tensor(Int64, 2), h.tensor(Int64, 2), floatArg(1)}
		}, "error: Integer division with addcdiv"},
		{"aten::lerp.Scalar", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2), h.tensor(Float64, 2), floatArg(0.5)} }, "error: expected dtype float for `end` but got dtype double"},
		{"aten::linalg_vector_norm", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 2, 3), floatArg(3), intsArg(1), boolArg(true), none}
		}, "2x1xf32"},
		{"aten::linalg_vector_norm", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 2), floatArg(2), none, boolArg(false), none} }, "error: Expected a floating point"},
	})
	h := newHarness(t)
	l := func(sizes ...int64) Arg { return h.list(h.tensor(Float32, sizes...), h.tensor(Float32, 3)) }
	steps := h.list(h.tensor(Float32), h.tensor(Float32))
	c := &Ctx{Op: "aten::_fused_adamw_", B: h.r.b, R: h.r, Args: []Arg{l(2), l(2), l(2), l(2), l(2), steps,
		floatArg(1e-3), floatArg(0.9), floatArg(0.999), floatArg(0.01), floatArg(1e-8), boolArg(true), boolArg(false), none, none}}
	e, _ := Lookup("aten::_fused_adamw_")
	outs, err := e.Rule.Fn(c)
	if err != nil || len(outs) != 0 || len(c.Writes) != 8 {
		t.Fatalf("fused adamw: %d results, %d writes, err %v; want 0, 8 (params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs), nil", len(outs), len(c.Writes), err)
	}
	c.Args[1] = l(4)
	if _, err := e.Rule.Fn(c); err == nil {
		t.Fatal("fused adamw accepted a grad of the wrong shape")
	}
}
