package dispatch

import "testing"

// binaryLowerings covers binary.go: results take the promoted dtype of
// tensors and Python numbers, as in PyTorch.
var binaryLowerings = family("binary", []lowering{
	{"aten::__lshift__.Scalar", "i32[3] #2", "3xi32", `CHECK: stablehlo.shift_left"`},
	{"aten::__lshift__.Tensor", "i64[3] i64[3]", "3xi64", `CHECK: stablehlo.shift_left"`},
	{"aten::__rshift__.Scalar", "i16[3] #1", "3xi16", `CHECK: stablehlo.shift_right_arithmetic"`},
	{"aten::__rshift__.Tensor", "u8[3] u8[3]", "3xui8", `CHECK: stablehlo.shift_right_logical"`},
	{"aten::add.Scalar", "i32[2,3] #2.5 #1", "2x3xf32", `CHECK: stablehlo.convert"; CHECK: stablehlo.add"`},
	{"aten::add.Tensor", "f32[2,3] f32[3]", "2x3xf32", `CHECK: stablehlo.broadcast_in_dim"; CHECK: stablehlo.add"`},
	{"aten::add.Tensor", "i32[3] f64[]", "3xf64", `CHECK: stablehlo.add"`},
	{"aten::add.Tensor", "i32[3] i64[] #3", "3xi32", `CHECK: stablehlo.multiply"; CHECK: stablehlo.add"`},
	{"aten::add.Tensor", "b[3] b[3]", "3xi1", `CHECK: stablehlo.or"`},
	{"aten::add.Tensor", "f32[3] f32[4]", "error: size of tensor a (3) must match the size of tensor b (4)", ""},
	{"aten::atan2", "f32[3] f32[3]", "3xf32", `CHECK: stablehlo.atan2"`},
	{"aten::atan2", "i32[3] i32[3]", "3xf32", `CHECK: stablehlo.convert"; CHECK: stablehlo.atan2"`},
	{"aten::bitwise_and.Tensor", "i32[3] i32[3]", "3xi32", `CHECK: stablehlo.and"`},
	{"aten::bitwise_and.Tensor", "f32[3] f32[3]", "error: \"bitwise_and\" is not implemented for 'float32'", ""},
	{"aten::bitwise_left_shift.Tensor_Scalar", "i64[3] #3", "3xi64", `CHECK: stablehlo.shift_left"`},
	{"aten::bitwise_left_shift.Tensor", "i8[3] i8[3]", "3xi8", `CHECK: stablehlo.shift_left"`},
	{"aten::bitwise_or.Tensor", "b[3] b[3]", "3xi1", `CHECK: stablehlo.or"`},
	{"aten::bitwise_right_shift.Tensor_Scalar", "i32[3] #1", "3xi32", `CHECK: stablehlo.shift_right_arithmetic"`},
	{"aten::bitwise_right_shift.Tensor", "i32[3] i32[3]", "3xi32", `CHECK: stablehlo.shift_right_arithmetic"`},
	{"aten::bitwise_xor.Tensor", "u8[2,2] u8[2]", "2x2xui8", `CHECK: stablehlo.xor"`},
	{"aten::div.Scalar_mode", "i32[3] #2 'floor'", "3xi32", `CHECK: stablehlo.divide"`},
	{"aten::div.Scalar", "i32[3] #2", "3xf32", `CHECK: stablehlo.convert"; CHECK: stablehlo.divide"`},
	{"aten::div.Tensor_mode", "f32[3] f32[3] 'trunc'", "3xf32", `CHECK: stablehlo.divide"`},
	{"aten::div.Tensor_mode", "f32[3] f32[3] 'round'", "error: div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'", ""},
	{"aten::div.Tensor", "f16[3] f16[3]", "3xf16", `CHECK: stablehlo.divide"`},
	{"aten::fmod.Scalar", "f32[3] #1.5", "3xf32", `CHECK: stablehlo.remainder"`},
	{"aten::fmod.Tensor", "i32[3] i32[3]", "3xi32", `CHECK: stablehlo.remainder"`},
	{"aten::maximum", "f32[3] i64[3]", "3xf32", `CHECK: stablehlo.maximum"`},
	{"aten::minimum", "i32[3] i32[3]", "3xi32", `CHECK: stablehlo.minimum"`},
	{"aten::mul.Scalar", "f16[3] #3", "3xf16", `CHECK: stablehlo.multiply"`},
	{"aten::mul.Tensor", "b[3] b[3]", "3xi1", `CHECK: stablehlo.and"`},
	{"aten::mul.Tensor", "c64[3] f32[3]", "3xcomplex<f32>", `CHECK: stablehlo.multiply"`},
	{"aten::pow.Scalar", "#2 f32[3]", "3xf32", `CHECK: stablehlo.power"`},
	{"aten::pow.Tensor_Scalar", "f32[3] #2", "3xf32", `CHECK: stablehlo.multiply"; CHECK-NOT: stablehlo.power"`},
	{"aten::pow.Tensor_Scalar", "f32[3] #0.5", "3xf32", `CHECK: stablehlo.sqrt"`},
	{"aten::pow.Tensor_Tensor", "i32[3] i32[3]", "3xi32", ``},
	{"aten::remainder.Scalar", "f32[3] #2", "3xf32", `CHECK: stablehlo.remainder"`},
	{"aten::remainder.Tensor", "i64[3] i64[3]", "3xi64", `CHECK: stablehlo.remainder"; CHECK: stablehlo.select"`},
	{"aten::sub.Scalar", "f32[3] #1 #2", "3xf32", `CHECK: stablehlo.subtract"`},
	{"aten::sub.Tensor", "f32[3] f32[3] #1", "3xf32", `CHECK: stablehlo.subtract"`},
	{"aten::sub.Tensor", "b[3] b[3]", "error: subtraction, the `-` operator, with two bool tensors is not supported", ""},
})

func TestBinaryLowerings(t *testing.T) { runLowerings(t, binaryLowerings) }

// compareLowerings covers compare.go: comparisons, logical ops, where and clamp.
var compareLowerings = family("compare", []lowering{
	{"aten::clamp.Tensor", "f32[3] f32[3] f32[3]", "3xf32", `CHECK: stablehlo.maximum"; CHECK: stablehlo.minimum"`},
	{"aten::clamp_max.Tensor", "i32[3] i32[3]", "3xi32", `CHECK: stablehlo.minimum"`},
	{"aten::clamp_max", "f32[3] #1", "3xf32", `CHECK: stablehlo.minimum"`},
	{"aten::clamp_min.Tensor", "f32[2,3] f32[3]", "2x3xf32", `CHECK: stablehlo.maximum"`},
	{"aten::clamp_min", "i64[3] #0", "3xi64", `CHECK: stablehlo.maximum"`},
	{"aten::clamp", "f32[3] #0 #1", "3xf32", `CHECK: stablehlo.maximum"; CHECK: stablehlo.minimum"`},
	{"aten::eq.Scalar", "f32[3] #1", "3xi1", `CHECK: stablehlo.compare"; CHECK-SAME: comparison_direction EQ`},
	{"aten::eq.Tensor", "i32[3] i64[3]", "3xi1", `CHECK: comparison_type SIGNED; CHECK-SAME: comparison_direction EQ`},
	{"aten::ge.Scalar", "u8[3] #1", "3xi1", `CHECK: comparison_type UNSIGNED; CHECK-SAME: comparison_direction GE`},
	{"aten::ge.Tensor", "f32[3] f32[3]", "3xi1", `CHECK: comparison_direction GE`},
	{"aten::gt.Scalar", "f32[3] #0.5", "3xi1", `CHECK: comparison_type FLOAT; CHECK-SAME: comparison_direction GT`},
	{"aten::gt.Tensor", "f32[3] f32[3]", "3xi1", `CHECK: comparison_direction GT`},
	{"aten::gt.Tensor", "c64[3] c64[3]", "error: \"gt_cpu\" not implemented for 'ComplexFloat'", ""},
	{"aten::le.Scalar", "c64[3] #1", "error: \"le_cpu\" not implemented for 'ComplexFloat'", ""},
	{"aten::le.Scalar", "i32[3] #2", "3xi1", `CHECK: comparison_direction LE`},
	{"aten::le.Tensor", "f32[3] f32[3]", "3xi1", `CHECK: comparison_direction LE`},
	{"aten::logical_and", "f32[3] i32[3]", "3xi1", `CHECK: stablehlo.and"`},
	{"aten::logical_or", "b[3] b[3]", "3xi1", `CHECK: stablehlo.or"`},
	{"aten::logical_xor", "b[3] b[3]", "3xi1", `CHECK: stablehlo.xor"`},
	{"aten::lt.Scalar", "f32[3] #0", "3xi1", `CHECK: comparison_direction LT`},
	{"aten::lt.Tensor", "f32[3] f32[3]", "3xi1", `CHECK: comparison_direction LT`},
	{"aten::ne.Scalar", "i32[3] #1", "3xi1", `CHECK: comparison_direction NE`},
	{"aten::ne.Tensor", "c64[3] c64[3]", "3xi1", `CHECK: comparison_type FLOAT; CHECK-SAME: comparison_direction NE`},
	{"aten::where.ScalarOther", "b[3] f32[3] #0", "3xf32", `CHECK: stablehlo.select"`},
	{"aten::where.ScalarSelf", "b[3] #0 f16[3]", "3xf16", `CHECK: stablehlo.select"`},
	{"aten::where.Scalar", "b[3] #1.5 #2", "3xf32", `CHECK: stablehlo.select"`},
	{"aten::where.self", "b[2,1] f32[3] f32[2,3]", "2x3xf32", `CHECK: stablehlo.select"`},
})

func TestCompareLowerings(t *testing.T) { runLowerings(t, compareLowerings) }
