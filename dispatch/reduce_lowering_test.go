package dispatch

import "testing"

// reduceLowerings covers reduce.go and stats.go: reductions keep or drop the
// reduced dimensions and give PyTorch's result dtypes.
var reduceLowerings = family("reduce", []lowering{
	{"aten::all.dim", "f32[2,3] 1 false", "2xi1", `CHECK: stablehlo.reduce"; CHECK: stablehlo.and"`},
	{"aten::all.dims", "f32[2,3] [0] true", "1x3xi1", `CHECK: stablehlo.reduce"`},
	{"aten::all", "u8[2,3]", "ui8", `CHECK: stablehlo.reduce"`},
	{"aten::amax", "f32[2,3] [1] true", "2x1xf32", `CHECK: stablehlo.reduce"; CHECK: stablehlo.maximum"`},
	{"aten::amin", "i32[2,3] [0,1]", "i32", `CHECK: stablehlo.reduce"; CHECK: stablehlo.minimum"`},
	{"aten::any.dim", "b[2,3] 0 false", "3xi1", `CHECK: stablehlo.reduce"; CHECK: stablehlo.or"`},
	{"aten::any.dims", "f32[2,3] none false", "i1", `CHECK: stablehlo.or"`},
	{"aten::any", "f32[2,3]", "i1", `CHECK: stablehlo.or"`},
	{"aten::argmax", "f32[2,3] 1 false", "2xi64", `CHECK: stablehlo.iota"; CHECK-SAME: -> tensor<2x3xi64>; CHECK: stablehlo.reduce"`},
	{"aten::argmin", "f32[2,3] none false", "i64", `CHECK: stablehlo.reduce"`},
	{"aten::max.dim", "f32[2,3] 1 false", "2xf32, 2xi64", `CHECK: stablehlo.reduce"`},
	{"aten::max.other", "f32[3] f32[3]", "3xf32", `CHECK: stablehlo.maximum"`},
	{"aten::max", "f32[2,3]", "f32", `CHECK: stablehlo.reduce"; CHECK: stablehlo.maximum"`},
	{"aten::mean.dim", "f32[2,3] [1] false none", "2xf32", `CHECK: stablehlo.reduce"; CHECK: stablehlo.divide"`},
	{"aten::mean", "f16[4] none", "f16", `CHECK: stablehlo.convert"; CHECK-SAME: -> tensor<4xf32>; CHECK: stablehlo.reduce"`},
	{"aten::min.dim", "i64[2,3] 0 true", "1x3xi64, 1x3xi64", `CHECK: stablehlo.reduce"`},
	{"aten::min.other", "i32[3] f32[3]", "3xf32", `CHECK: stablehlo.minimum"`},
	{"aten::min", "f32[0]", "error: min(): Expected reduction dim to be specified for input.numel() == 0", ""},
	{"aten::prod.dim_int", "i32[2,3] 1 false none", "2xi64", `CHECK: stablehlo.reduce"; CHECK: stablehlo.multiply"`},
	{"aten::prod", "f32[2,3] none", "f32", `CHECK: stablehlo.multiply"`},
	{"aten::std.correction", "f32[2,3] [1] #0 false", "2xf32", `CHECK: stablehlo.sqrt"`},
	{"aten::std.dim", "f32[2,3] [0] true true", "1x3xf32", `CHECK: stablehlo.sqrt"`},
	{"aten::std", "f64[5] true", "f64", `CHECK: stablehlo.sqrt"`},
	{"aten::sum.dim_IntList", "i8[2,3] [0] false none", "3xi64", `CHECK: stablehlo.convert"; CHECK: stablehlo.reduce"`},
	{"aten::sum", "f32[2,3] dt:f64", "f64", `CHECK: stablehlo.convert"; CHECK-SAME: -> tensor<2x3xf64>; CHECK: stablehlo.reduce"`},
	{"aten::trace", "f32[3,4]", "f32", `CHECK: stablehlo.reduce"`},
	{"aten::trace", "i32[3,3]", "i64", `CHECK: stablehlo.reduce"`},
	{"aten::trace", "f32[3]", "error: trace: expected a matrix", ""},
	{"aten::var.correction", "f32[2,3] none #1 false", "f32", `CHECK: stablehlo.reduce"; CHECK-NOT: stablehlo.sqrt"`},
	{"aten::var.dim", "f32[2,3] [1] false false", "2xf32", `CHECK: stablehlo.reduce"`},
	{"aten::var", "f32[4] true", "f32", `CHECK: stablehlo.divide"`},
	{"aten::aminmax", "f32[2,3] 1 false", "2xf32, 2xf32", `CHECK: stablehlo.minimum"; CHECK: stablehlo.maximum"`},
	{"aten::count_nonzero.dim_IntList", "f32[2,3] [1]", "2xi64", `CHECK: stablehlo.compare"; CHECK-SAME: NE; CHECK: stablehlo.reduce"`},
	{"aten::count_nonzero", "f32[2,3] none", "i64", `CHECK: stablehlo.reduce"`},
	{"aten::histc", "f32[10] 4 #0 #1", "4xf32", ``},
	{"aten::histc", "i32[6] 4 #0 #3", "4xi32", `CHECK: stablehlo.divide"`},
	{"aten::histc", "b[2] 4 #0 #3", "error: \"histogram_cpu\" not implemented for 'Bool'", ""},
	{"aten::nansum", "f32[2,3] [1] false none", "2xf32", `CHECK: stablehlo.select"; CHECK: stablehlo.reduce"`},
	{"aten::norm.ScalarOpt_dim_dtype", "f32[2,3] #2 [1] false dt:f64", "2xf64", `CHECK: stablehlo.sqrt"`},
	{"aten::norm.ScalarOpt_dim", "f32[2,3] #1 [0] true", "1x3xf32", `CHECK: stablehlo.abs"; CHECK: stablehlo.reduce"`},
	{"aten::norm.ScalarOpt_dtype", "f32[2,3] #2 dt:f32", "f32", `CHECK: stablehlo.sqrt"`},
	{"aten::norm.Scalar", "f32[2,3] #2", "f32", `CHECK: stablehlo.sqrt"`},
	{"aten::renorm", "f32[2,3] #2 0 #1", "2x3xf32", `CHECK: stablehlo.sqrt"; CHECK: stablehlo.select"`},
	{"aten::std_mean.correction", "f32[2,3] [1] #1 false", "2xf32, 2xf32", `CHECK: stablehlo.sqrt"`},
	{"aten::var_mean.correction", "f32[2,3] none none true", "1x1xf32, 1x1xf32", `CHECK-NOT: stablehlo.sqrt"`},
})

func TestReduceLowerings(t *testing.T) { runLowerings(t, reduceLowerings) }

// sortLowerings covers sort.go, scan.go and search.go: sorts, order
// statistics, cumulative ops and binary searches.
var sortLowerings = family("sort", []lowering{
	{"aten::kthvalue", "f32[2,5] 2 -1 false", "2xf32, 2xi64", `CHECK: stablehlo.sort"`},
	{"aten::kthvalue", "f32[2,5] 6 -1 false", "error: kthvalue(): selected number k out of range for dimension 1", ""},
	{"aten::median.dim", "f32[2,5] 1 true", "2x1xf32, 2x1xi64", `CHECK: stablehlo.sort"`},
	{"aten::median", "f32[2,5]", "f32", `CHECK: stablehlo.sort"`},
	{"aten::mode", "i32[2,5] -1 false", "2xi32, 2xi64", `CHECK: stablehlo.sort"`},
	{"aten::nanmedian.dim", "f32[2,5] 0 false", "5xf32, 5xi64", `CHECK: stablehlo.sort"`},
	{"aten::nanmedian", "f64[7]", "f64", `CHECK: stablehlo.sort"`},
	{"aten::sort.stable", "f32[2,5] true -1 true", "2x5xf32, 2x5xi64", `CHECK: stablehlo.sort"; CHECK: dimension = 1 : i64, is_stable = true`},
	{"aten::sort", "i64[5] 0 false", "5xi64, 5xi64", `CHECK: stablehlo.sort"`},
	{"aten::topk", "f32[2,5] 3 -1 true true", "2x3xf32, 2x3xi64", `CHECK: stablehlo.sort"; CHECK: stablehlo.slice"`},
	{"aten::topk", "f32[2,5] 6 -1 true true", "error: selected index k out of range", ""},
	{"aten::_cummax_helper", "f32[2,3] f32[2,3] i64[2,3] 1", "", ``},
	{"aten::_cummin_helper", "f32[2,3] f32[2,3] i64[2,3] 0", "", ``},
	{"aten::_logcumsumexp", "f32[2,3] 1", "2x3xf32", `CHECK: stablehlo.reduce_window"`},
	{"aten::cummax", "f32[2,3] 1", "2x3xf32, 2x3xi64", ``},
	{"aten::cummin", "i32[4] 0", "4xi32, 4xi64", ``},
	{"aten::cumprod", "f32[2,3] 0 none", "2x3xf32", `CHECK: stablehlo.reduce_window"; CHECK: stablehlo.multiply"`},
	{"aten::cumsum", "i32[2,3] 1 none", "2x3xi64", `CHECK: stablehlo.reduce_window"; CHECK: stablehlo.add"`},
	{"aten::cumsum", "f32[2,3] 2 none", "error: Dimension out of range (expected to be in range of [-2, 1], but got 2)", ""},
	{"aten::bincount", "i64[5]=0,1,1,3,0 none 0", "4xi64", ``},
	{"aten::bincount", "i64[3]=0,-1,1 none 0", "error: bincount only supports 1-d non-negative integral inputs", ""},
	{"aten::bucketize.Scalar", "#2 f32[4] false false", "i64", `CHECK: stablehlo.compare"`},
	{"aten::bucketize.Tensor", "f32[2,3] f32[4] true false", "2x3xi32", `CHECK: stablehlo.compare"`},
	{"aten::searchsorted.Scalar", "f32[4] #2 false false none none", "i64", `CHECK: stablehlo.compare"`},
	{"aten::searchsorted.Tensor", "f32[2,4] f32[2,3] false true none none", "2x3xi64", `CHECK: stablehlo.gather"; CHECK: stablehlo.compare"`},
})

func TestSortLowerings(t *testing.T) { runLowerings(t, sortLowerings) }
