package dispatch

import "testing"

func TestNormRules(t *testing.T) {
	f32 := func(h *harness, s ...int64) Arg { return h.tensor(Float32, s...) }
	bf := func(h *harness, s ...int64) Arg { return h.tensor(BFloat16, s...) }
	runCases(t, []ruleCase{
		{"aten::native_layer_norm", func(h *harness) []Arg {
			return []Arg{f32(h, 2, 3, 4), intsArg(3, 4), f32(h, 3, 4), none, floatArg(1e-5)}
		}, "2x3x4xf32, 2x1x1xf32, 2x1x1xf32"},
		{"aten::native_layer_norm", func(h *harness) []Arg {
			return []Arg{bf(h, 2, 4), intsArg(4), none, none, floatArg(1e-5)}
		}, "2x4xbf16, 2x1xbf16, 2x1xbf16"},
		{"aten::native_layer_norm", func(h *harness) []Arg {
			return []Arg{f32(h, 4, 6), intsArg(5), none, none, floatArg(1e-5)}
		}, "error: Given normalized_shape=[5], expected input with shape [*, 5], but got input of size[4, 6]"},
		{"aten::native_layer_norm", func(h *harness) []Arg {
			return []Arg{f32(h, 4, 5), intsArg(5), f32(h, 3), none, floatArg(1e-5)}
		}, "error: Expected weight to be of same shape as normalized_shape"},
		{"aten::native_layer_norm_backward", func(h *harness) []Arg {
			return []Arg{f32(h, 2, 4), f32(h, 2, 4), intsArg(4), f32(h, 2, 1), f32(h, 2, 1), f32(h, 4), none,
				Arg{Kind: ArgBoolList, Ints: []int64{1, 1, 0}}}
		}, "2x4xf32, 4xf32, 4xf32"},
		{"aten::native_group_norm", func(h *harness) []Arg {
			return []Arg{f32(h, 2, 6, 3), f32(h, 6), f32(h, 6), intArg(2), intArg(6), intArg(3), intArg(3), floatArg(1e-5)}
		}, "2x6x3xf32, 2x3xf32, 2x3xf32"},
		{"aten::native_group_norm", func(h *harness) []Arg {
			return []Arg{f32(h, 2, 6, 3), none, none, intArg(2), intArg(6), intArg(3), intArg(4), floatArg(1e-5)}
		}, "error: Expected number of channels in input to be divisible by num_groups"},
		{"aten::native_group_norm_backward", func(h *harness) []Arg {
			return []Arg{f32(h, 2, 6, 3), f32(h, 2, 6, 3), f32(h, 2, 3), f32(h, 2, 3), f32(h, 6),
				intArg(2), intArg(6), intArg(3), intArg(3), Arg{Kind: ArgBoolList, Ints: []int64{1, 1, 1}}}
		}, "2x6x3xf32, 6xf32, 6xf32"},
		{"aten::native_batch_norm", func(h *harness) []Arg {
			return []Arg{f32(h, 4, 3, 5), f32(h, 3), f32(h, 3), f32(h, 3), f32(h, 3), boolArg(true), floatArg(0.1), floatArg(1e-5)}
		}, "4x3x5xf32, 3xf32, 3xf32"},
		{"aten::native_batch_norm", func(h *harness) []Arg {
			return []Arg{f32(h, 4, 3), none, none, f32(h, 3), f32(h, 3), boolArg(false), floatArg(0.1), floatArg(1e-5)}
		}, "4x3xf32, 0xf32, 0xf32"},
		{"aten::native_batch_norm", func(h *harness) []Arg {
			return []Arg{f32(h, 4, 3), none, none, none, none, boolArg(false), floatArg(0.1), floatArg(1e-5)}
		}, "error: running_mean and running_var must be defined in evaluation mode"},
		{"aten::native_batch_norm", func(h *harness) []Arg {
			return []Arg{f32(h, 4, 3), f32(h, 4), none, none, none, boolArg(true), floatArg(0.1), floatArg(1e-5)}
		}, "error: weight should contain 3 elements not 4"},
		{"aten::_batch_norm_with_update", func(h *harness) []Arg {
			return []Arg{f32(h, 4, 3), none, none, f32(h, 3), f32(h, 3), floatArg(0.1), floatArg(1e-5)}
		}, "4x3xf32, 3xf32, 3xf32, 0xui8"},
		{"aten::native_batch_norm_backward", func(h *harness) []Arg {
			return []Arg{f32(h, 4, 3, 2), f32(h, 4, 3, 2), f32(h, 3), f32(h, 3), f32(h, 3), f32(h, 3), f32(h, 3),
				boolArg(true), floatArg(1e-5), Arg{Kind: ArgBoolList, Ints: []int64{1, 1, 1}}}
		}, "4x3x2xf32, 3xf32, 3xf32"},
	})
}

func TestLossAndGradRules(t *testing.T) {
	f32 := func(h *harness, s ...int64) Arg { return h.tensor(Float32, s...) }
	runCases(t, []ruleCase{
		{"aten::nll_loss_forward", func(h *harness) []Arg {
			return []Arg{f32(h, 3, 5), h.index([]int64{0, 4, -100}, 3), none, intArg(1), intArg(-100)}
		}, "f32, f32"},
		{"aten::nll_loss_forward", func(h *harness) []Arg {
			return []Arg{f32(h, 3, 5), h.index([]int64{0, 5, 1}, 3), none, intArg(0), intArg(-100)}
		}, "error: Target 5 is out of bounds."},
		{"aten::nll_loss_forward", func(h *harness) []Arg {
			return []Arg{f32(h, 3, 5), h.tensor(Int32, 3), none, intArg(1), intArg(-100)}
		}, "error: expected target dtype to be Long or Byte, but got Int"},
		{"aten::nll_loss_forward", func(h *harness) []Arg {
			return []Arg{f32(h, 3, 5), h.index([]int64{0, 1}, 2), none, intArg(1), intArg(-100)}
		}, "error: size mismatch (got input: [3, 5], target: [2])"},
		{"aten::nll_loss_forward", func(h *harness) []Arg {
			return []Arg{f32(h, 3, 5), h.index([]int64{0, 1, 2}, 3), f32(h, 4), intArg(0), intArg(-100)}
		}, "error: weight tensor should be defined either for all 5 classes or no classes"},
		{"aten::nll_loss2d_forward", func(h *harness) []Arg {
			return []Arg{f32(h, 2, 5, 3, 4), h.tensor(Int64, 2, 3, 4), none, intArg(0), intArg(-100)}
		}, "2x3x4xf32, f32"},
		{"aten::nll_loss_backward", func(h *harness) []Arg {
			return []Arg{f32(h), f32(h, 3, 5), h.tensor(Int64, 3), none, intArg(1), intArg(-100), f32(h)}
		}, "3x5xf32"},
		{"aten::mse_loss", func(h *harness) []Arg { return []Arg{f32(h, 3, 5), f32(h, 3, 5), intArg(0)} }, "3x5xf32"},
		{"aten::mse_loss", func(h *harness) []Arg { return []Arg{f32(h, 3, 5), f32(h, 3, 5), intArg(1)} }, "f32"},
		{"aten::mse_loss_backward", func(h *harness) []Arg {
			return []Arg{f32(h), f32(h, 3, 5), f32(h, 3, 5), intArg(1)}
		}, "3x5xf32"},
		{"aten::gelu_backward", func(h *harness) []Arg { return []Arg{f32(h, 3), f32(h, 3), strArg("tanh")} }, "3xf32"},
		{"aten::gelu_backward", func(h *harness) []Arg { return []Arg{f32(h, 3), f32(h, 3), strArg("fast")} },
			"error: approximate argument must be either none or tanh."},
		{"aten::threshold_backward", func(h *harness) []Arg { return []Arg{f32(h, 3), f32(h, 3), scalarInt(0)} }, "3xf32"},
		{"aten::tanh_backward", func(h *harness) []Arg { return []Arg{h.tensor(BFloat16, 3), h.tensor(BFloat16, 3)} }, "3xbf16"},
		{"aten::log_sigmoid_forward", func(h *harness) []Arg { return []Arg{f32(h, 3)} }, "3xf32, 0xf32"},
		{"aten::embedding_dense_backward", func(h *harness) []Arg {
			return []Arg{f32(h, 2, 3, 4), h.tensor(Int64, 2, 3), intArg(10), intArg(0), boolArg(true)}
		}, "10x4xf32"},
		{"aten::embedding_dense_backward", func(h *harness) []Arg {
			return []Arg{f32(h, 2, 3, 4), f32(h, 2, 3), intArg(10), intArg(0), boolArg(false)}
		}, "error: 'indices' to have one of the following scalar types: Long, Int; but got Float"},
		{"aten::isneginf", func(h *harness) []Arg { return []Arg{f32(h, 3)} }, "3xi1"},
	})
}
