package dispatch

import "testing"

// shapeLowerings covers shape_ops.go, indexing.go, scatter_reduce.go and
// take_put.go: indices are checked on the host through the reader, which
// reports the values written after "=".
var shapeLowerings = family("shape", []lowering{
	{"aten::cat", "(f32[2,3] f32[1,3]) 0", "3x3xf32", `CHECK: stablehlo.concatenate"; CHECK-SAME: dimension = 0`},
	{"aten::cat", "(i32[2] f64[2]) 0", "4xf64", `CHECK: stablehlo.convert"; CHECK: stablehlo.concatenate"`},
	{"aten::channel_shuffle", "f32[1,4,2,2] 2", "1x4x2x2xf32", `CHECK: stablehlo.transpose"`},
	{"aten::channel_shuffle", "f32[1,5,2,2] 2", "error: Number of channels must be divisible by groups", ""},
	{"aten::constant_pad_nd", "f32[2,3] [1,1] #0", "2x5xf32", `CHECK: stablehlo.pad"`},
	{"aten::flip", "f32[2,3] [1]", "2x3xf32", `CHECK: stablehlo.reverse"; CHECK-SAME: dimensions = array<i64: 1>`},
	{"aten::gather", "f32[3,4] 1 i64[3,2]=0,1,2,3,0,1 false", "3x2xf32", `CHECK: stablehlo.gather"`},
	{"aten::index_select", "f32[3,4] 0 i64[2]=2,0", "2x4xf32", `CHECK: stablehlo.gather"`},
	{"aten::masked_fill.Scalar", "f32[2,3] b[2,3] #1", "2x3xf32", `CHECK: stablehlo.select"`},
	{"aten::masked_fill.Tensor", "f32[2,3] b[3] f32[]", "2x3xf32", `CHECK: stablehlo.select"`},
	{"aten::roll", "f32[2,3] [1] [1]", "2x3xf32", `CHECK: stablehlo.slice"; CHECK: stablehlo.concatenate"`},
	{"aten::scatter.src", "f32[3,4] 1 i64[3,1]=0,1,2 f32[3,4]", "3x4xf32", `CHECK: stablehlo.scatter"`},
	{"aten::scatter.value", "f32[3,4] 0 i64[1,4]=0,1,2,0 #2", "3x4xf32", `CHECK: stablehlo.scatter"`},
	{"aten::scatter_add", "f32[3] 0 i64[4]=0,0,1,2 f32[4]", "3xf32", `CHECK: stablehlo.scatter"; CHECK: stablehlo.add"`},
	{"aten::tril", "f32[3,3] 0", "3x3xf32", `CHECK: stablehlo.iota"; CHECK: stablehlo.select"`},
	{"aten::triu", "i32[2,3,3] 1", "2x3x3xi32", `CHECK: stablehlo.select"`},
	{"aten::index.Tensor", "f32[3,4] (i64[2]=0,2)", "2x4xf32", `CHECK: stablehlo.gather"`},
	{"aten::index.Tensor", "f32[3,4] (undef i64[2]=1,3)", "3x2xf32", `CHECK: stablehlo.gather"`},
	{"aten::index.Tensor", "f32[3,4] (i64[2]=0,5)", "error: index 5 is out of bounds for dimension 0 with size 3", ""},
	{"aten::index_put", "f32[3,4] (i64[2]=0,2) f32[4] true", "3x4xf32", `CHECK: stablehlo.scatter"; CHECK: stablehlo.add"`},
	{"aten::masked_scatter", "f32[2,3] b[2,3] f32[6]", "2x3xf32", ``},
	{"aten::masked_select", "f32[2,3] b[2,3]", "0xf32", ``},
	{"aten::nonzero", "f32[2,3]", "0x2xi64", ``},
	{"aten::repeat_interleave.Tensor", "i64[3]=1,0,2 none", "3xi64", ``},
	{"aten::index_add", "f32[3,4] 0 i64[2]=0,2 f32[2,4] #1", "3x4xf32", `CHECK: stablehlo.scatter"`},
	{"aten::index_copy", "f32[3,4] 1 i64[2]=0,3 f32[3,2]", "3x4xf32", `CHECK: stablehlo.scatter"`},
	{"aten::index_reduce", "f32[3,4] 0 i64[2]=0,0 f32[2,4] 'amax' true", "3x4xf32", `CHECK: stablehlo.scatter"; CHECK: stablehlo.maximum"`},
	{"aten::scatter.reduce", "f32[3] 0 i64[2]=0,2 f32[2] 'multiply'", "3xf32", `CHECK: stablehlo.scatter"; CHECK: stablehlo.multiply"`},
	{"aten::scatter.value_reduce", "f32[3] 0 i64[2]=0,2 #2 'add'", "3xf32", `CHECK: stablehlo.scatter"; CHECK: stablehlo.add"`},
	{"aten::scatter_reduce.two", "f32[3] 0 i64[2]=0,2 f32[2] 'mean' false", "3xf32", `CHECK: stablehlo.scatter"; CHECK: stablehlo.divide"`},
	{"aten::scatter_reduce.two", "f32[3] 0 i64[2]=0,2 f32[2] 'median' true", "error: reduce argument must be either sum, prod, mean, amax or amin, got median", ""},
	{"aten::put", "f32[2,3] i64[2]=0,5 f32[2] false", "2x3xf32", `CHECK: stablehlo.scatter"`},
	{"aten::take", "f32[2,3] i64[2]=0,5", "2xf32", `CHECK: stablehlo.gather"`},
	{"aten::take", "f32[2,3] i64[2]=0,6", "error: out of range", ""},
})

func TestShapeLowerings(t *testing.T) { runLowerings(t, shapeLowerings) }

// elementLowerings covers copy.go, complex.go, addc_lerp.go, factory.go and
// linspace.go: copies, complex parts, fused pointwise ops and fills.
var elementLowerings = family("element", []lowering{
	{"aten::clone", "f32[2,3] none", "2x3xf32", `CHECK-NOT: stablehlo.convert"`},
	{"aten::copy", "f32[2,3] i64[3] false", "2x3xf32", `CHECK: stablehlo.convert"; CHECK: stablehlo.broadcast_in_dim"`},
	{"aten::_conj_physical", "c64[3]", "3xcomplex<f32>", `CHECK: stablehlo.imag"; CHECK: stablehlo.negate"; CHECK: stablehlo.complex"`},
	{"aten::conj_physical", "f32[3]", "3xf32", `CHECK-NOT: stablehlo.negate"`},
	{"aten::complex", "f32[3] f32[3]", "3xcomplex<f32>", `CHECK: stablehlo.complex"`},
	{"aten::complex", "f32[3] f64[3]", "error: Expected object of scalar type", ""},
	{"aten::polar", "f64[3] f64[3]", "3xcomplex<f64>", `CHECK: stablehlo.cosine"; CHECK: stablehlo.sine"; CHECK: stablehlo.complex"`},
	{"aten::addcdiv", "f32[3] f32[3] f32[3] #0.5", "3xf32", `CHECK: stablehlo.divide"; CHECK: stablehlo.add"`},
	{"aten::addcmul", "f32[2,3] f32[3] f32[2,1] #2", "2x3xf32", `CHECK: stablehlo.multiply"; CHECK: stablehlo.add"`},
	{"aten::lerp.Scalar", "f32[3] f32[3] #0.25", "3xf32", `CHECK: stablehlo.select"`},
	{"aten::lerp.Tensor", "f32[3] f32[3] f32[3]", "3xf32", `CHECK: stablehlo.select"`},
	{"aten::arange.start_out", "#0 #10 #3 i64[4]", "4xi64", `CHECK: stablehlo.iota"`},
	{"aten::arange.start_out", "#0 #1 #0.25 f32[4]", "4xf32", `CHECK: stablehlo.iota"`},
	{"aten::arange.start_out", "#0 #10 #0 i64[0]", "error: step must be nonzero", ""},
	{"aten::eye.m_out", "2 3 f32[2,3]", "2x3xf32", `CHECK: stablehlo.iota"; CHECK: stablehlo.compare"`},
	{"aten::eye.out", "3 i64[3,3]", "3x3xi64", `CHECK: stablehlo.compare"`},
	{"aten::fill.Scalar", "i32[2,3] #2.5", "2x3xi32", `CHECK: stablehlo.constant"; CHECK-SAME: tensor<i32>; CHECK: stablehlo.broadcast_in_dim"`},
	{"aten::fill.Tensor", "f32[2,3] f32[]", "2x3xf32", `CHECK: stablehlo.broadcast_in_dim"`},
	{"aten::fill.Tensor", "f32[2,3] f32[2]", "error: fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions", ""},
	{"aten::zero", "f64[2]", "2xf64", `CHECK: stablehlo.constant"`},
	{"aten::linspace.out", "#0 #1 5 f32[5]", "5xf32", `CHECK: stablehlo.iota"`},
	{"aten::logspace.out", "#0 #2 3 10.0 f64[3]", "3xf64", `CHECK: stablehlo.power"`},
})

func TestElementLowerings(t *testing.T) { runLowerings(t, elementLowerings) }
