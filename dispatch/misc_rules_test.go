package dispatch

import "testing"

func TestMiscRules(t *testing.T) {
	f32 := func(h *harness, s ...int64) Arg { return h.tensor(Float32, s...) }
	runCases(t, []ruleCase{
		{"aten::frexp.Tensor", func(h *harness) []Arg { return []Arg{f32(h, 3)} }, "3xf32, 3xi32"},
		{"aten::frexp.Tensor", func(h *harness) []Arg { return []Arg{h.tensor(BFloat16, 2, 2)} }, "2x2xbf16, 2x2xi32"},
		{"aten::frexp.Tensor", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 3)} },
			"error: torch.frexp() only supports floating-point dtypes"},
		{"aten::isin.Tensor_Tensor", func(h *harness) []Arg {
			return []Arg{h.tensor(Int64, 2, 3), f32(h, 4), boolArg(false), boolArg(true)}
		}, "2x3xi1"},
		{"aten::isin.Scalar_Tensor", func(h *harness) []Arg { return []Arg{scalarInt(2), f32(h, 4)} }, "i1"},
		{"aten::nonzero_static", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 2, 3), intArg(4), intArg(-1)} }, "4x2xi64"},
		{"aten::histogram.bin_ct", func(h *harness) []Arg { return []Arg{f32(h, 10), intArg(4), none, none, boolArg(true)} },
			"4xf32, 5xf32"},
		{"aten::histogram.bin_ct", func(h *harness) []Arg { return []Arg{h.tensor(Int64, 10), intArg(4)} },
			"error: should be floating point"},
		{"aten::_histogramdd_bin_edges", func(h *harness) []Arg { return []Arg{f32(h, 6, 2), intsArg(3, 4)} },
			"4xf32, 5xf32"},
		{"aten::_histogramdd_from_bin_cts", func(h *harness) []Arg { return []Arg{f32(h, 6, 2), intsArg(3)} },
			"error: The size of bins must be equal to the innermost dimension of the input."},
		{"aten::multi_margin_loss", func(h *harness) []Arg {
			return []Arg{f32(h, 4, 5), h.tensor(Int64, 4), scalarInt(1), scalarInt(1), none, intArg(0)}
		}, "4xf32"},
		{"aten::multi_margin_loss", func(h *harness) []Arg {
			return []Arg{f32(h, 4, 5), h.tensor(Int64, 4), scalarInt(3), scalarInt(1), none, intArg(1)}
		}, "error: only p == 1 and p == 2 supported"},
		{"aten::multi_margin_loss", func(h *harness) []Arg {
			return []Arg{f32(h, 2, 5), h.index([]int64{0, 5}, 2), scalarInt(1), scalarInt(1), none, intArg(1)}
		}, "error: target out of range"},
		{"aten::multi_margin_loss_backward", func(h *harness) []Arg {
			return []Arg{f32(h), f32(h, 4, 5), h.tensor(Int64, 4), scalarInt(2), floatArg(0.5), f32(h, 5), intArg(2)}
		}, "4x5xf32"},
		{"aten::multilabel_margin_loss_forward", func(h *harness) []Arg {
			return []Arg{f32(h, 3, 4), h.index([]int64{0, 3, -1, 2, 1, -1, 0, 0, -1, 3, 3, 3}, 3, 4), intArg(0)}
		}, "3xf32, 3x4xf32"},
		{"aten::multilabel_margin_loss_forward", func(h *harness) []Arg {
			return []Arg{f32(h, 3, 4), h.index([]int64{0, 4, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 3, 4), intArg(1)}
		}, "error: argument #2 'target' is out of range: 4 is not in [-1, 4)"},
		{"aten::multilabel_margin_loss_forward", func(h *harness) []Arg {
			return []Arg{f32(h, 3, 4), h.index([]int64{0, -2, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 3, 4), intArg(1)}
		}, "error: argument #2 'target' is out of range: -2 is not in [-1, 4)"},
		{"aten::multilabel_margin_loss_forward", func(h *harness) []Arg {
			return []Arg{f32(h, 3, 4), h.tensor(Int64, 3, 5), intArg(1)}
		}, "error: inconsistent target size"},
		{"aten::_upsample_bilinear2d_aa", func(h *harness) []Arg {
			return []Arg{f32(h, 1, 2, 10, 12), intsArg(4, 15), boolArg(false), none, none}
		}, "1x2x4x15xf32"},
		{"aten::_upsample_bilinear2d_aa_backward", func(h *harness) []Arg {
			return []Arg{f32(h, 1, 2, 4, 15), intsArg(4, 15), intsArg(1, 2, 10, 12), boolArg(true), none, none}
		}, "1x2x10x12xf32"},
		{"aten::_scaled_dot_product_flash_attention_for_cpu", func(h *harness) []Arg {
			return []Arg{f32(h, 2, 3, 4, 8), f32(h, 2, 3, 6, 8), f32(h, 2, 3, 6, 5), floatArg(0), boolArg(true)}
		}, "2x3x4x5xf32, 2x4x3xf32"},
		{"aten::_scaled_dot_product_flash_attention_for_cpu_backward", func(h *harness) []Arg {
			return []Arg{f32(h, 2, 4, 5), f32(h, 2, 4, 8), f32(h, 2, 6, 8), f32(h, 2, 6, 5), f32(h, 2, 4, 5), f32(h, 2, 4),
				floatArg(0), boolArg(false), f32(h, 4, 6)}
		}, "2x4x8xf32, 2x6x8xf32, 2x6x5xf32"},
		{"aten::_native_multi_head_attention", func(h *harness) []Arg {
			return []Arg{f32(h, 2, 5, 8), f32(h, 2, 5, 8), f32(h, 2, 5, 8), intArg(8), intArg(2), f32(h, 24, 8), f32(h, 24),
				f32(h, 8, 8), f32(h, 8), h.tensor(Bool, 2, 5), boolArg(true), boolArg(true), intArg(1)}
		}, "2x5x8xf32, 2x5x5xf32"},
		{"aten::segment_reduce", func(h *harness) []Arg {
			return []Arg{f32(h, 7, 3), strArg("max"), h.index([]int64{2, 0, 4, 1}, 4), none, none, intArg(0), boolArg(false), scalarInt(1)}
		}, "4x3xf32"},
		{"aten::segment_reduce", func(h *harness) []Arg {
			return []Arg{f32(h, 7, 3), strArg("sum"), h.index([]int64{2, 0, 4}, 3), none, none, intArg(0), boolArg(false)}
		}, "error: Expected all rows of lengths along axis to sum to data.size"},
		{"aten::segment_reduce", func(h *harness) []Arg {
			return []Arg{f32(h, 7, 3), strArg("sum"), h.index([]int64{8, -1}, 2), none, none, intArg(0), boolArg(false)}
		}, "error: lengths contains negative value!"},
		{"aten::segment_reduce", func(h *harness) []Arg {
			return []Arg{f32(h, 7, 3), strArg("median"), none, none, h.tensor(Int64, 5)}
		}, "error: unsupported reduction median"},
		{"aten::_segment_reduce_backward", func(h *harness) []Arg {
			return []Arg{f32(h, 4, 3), f32(h, 4, 3), f32(h, 7, 3), strArg("prod"), none, h.tensor(Int64, 5), intArg(0)}
		}, "7x3xf32"},
	})
}
