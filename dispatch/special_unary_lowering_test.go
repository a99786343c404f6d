package dispatch

import "testing"

// besselLowerings covers special_bessel*.go, special_airy.go, igamma.go,
// gcd.go, glu.go, isin.go, frexp.go and vector_norm.go.
var besselLowerings = family("bessel", []lowering{
	{"aten::i0", "f32[3]", "3xf32", ``},
	{"aten::special_airy_ai", "f32[3]", "3xf32", ``},
	{"aten::special_bessel_j0", "f32[3]", "3xf32", ``},
	{"aten::special_bessel_j1", "f64[3]", "3xf64", ``},
	{"aten::special_bessel_y0", "f32[3]", "3xf32", ``},
	{"aten::special_bessel_y1", "f32[3]", "3xf32", ``},
	{"aten::special_erfcx", "f32[3]", "3xf32", ``},
	{"aten::special_i0e", "f32[3]", "3xf32", ``},
	{"aten::special_i1", "f32[3]", "3xf32", ``},
	{"aten::special_i1e", "i32[3]", "3xf32", `CHECK: stablehlo.convert"`},
	{"aten::special_log_ndtr", "f32[3]", "3xf32", `CHECK: stablehlo.log`},
	{"aten::special_modified_bessel_i0", "f32[3]", "3xf32", ``},
	{"aten::special_modified_bessel_i1", "f32[3]", "3xf32", ``},
	{"aten::special_modified_bessel_k0", "f32[3]", "3xf32", ``},
	{"aten::special_modified_bessel_k1", "f32[3]", "3xf32", ``},
	{"aten::special_scaled_modified_bessel_k0", "f32[3]", "3xf32", ``},
	{"aten::special_scaled_modified_bessel_k1", "f32[3]", "3xf32", ``},
	{"aten::special_spherical_bessel_j0", "f32[3]", "3xf32", `CHECK: stablehlo.sine"`},
	{"aten::igamma", "f32[3] f32[3]", "3xf32", ``},
	{"aten::igammac", "f64[3] f64[3]", "3xf64", ``},
	{"aten::gcd", "i32[3] i32[3]", "3xi32", `CHECK: stablehlo.while"`},
	{"aten::gcd", "f32[3] f32[3]", "error: not implemented for 'Float'", ""},
	{"aten::lcm", "i64[3] i64[3]", "3xi64", `CHECK: stablehlo.while"`},
	{"aten::glu", "f32[2,4] -1", "2x2xf32", `CHECK: stablehlo.slice"; CHECK: stablehlo.logistic"`},
	{"aten::glu", "f32[2,3] -1", "error: Halving dimension must be even", ""},
	{"aten::glu_backward", "f32[2,2] f32[2,4] -1", "2x4xf32", `CHECK: stablehlo.logistic"`},
	{"aten::isin.Scalar_Tensor", "#2 f32[4] false false", "i1", `CHECK: stablehlo.compare"`},
	{"aten::isin.Tensor_Scalar", "f32[2,3] #2 false true", "2x3xi1", `CHECK: stablehlo.compare"`},
	{"aten::isin.Tensor_Tensor", "i64[2,3] i64[4] false false", "2x3xi1", `CHECK: stablehlo.compare"`},
	{"aten::frexp.Tensor", "f32[3]", "3xf32, 3xi32", `CHECK: stablehlo.bitcast_convert"`},
	{"aten::linalg_vector_norm", "f32[2,3] #2 [1] false none", "2xf32", `CHECK: stablehlo.sqrt"`},
	{"aten::linalg_vector_norm", "f32[2,3] #0 none false none", "f32", `CHECK: stablehlo.compare"; CHECK-SAME: NE`},
	{"aten::min", "i32[2,3]", "i32", `CHECK: stablehlo.reduce"; CHECK: stablehlo.minimum"`},
	{"aten::index_fill.int_Scalar", "f32[3,4] 1 i64[2]=0,3 #2", "3x4xf32", ``},
	{"aten::index_fill.int_Tensor", "f32[3,4] 0 i64[1]=2 f32[]", "3x4xf32", ``},
	{"aten::hash_tensor", "f32[2,3] [] 0", "ui64", `CHECK: stablehlo.bitcast_convert"; CHECK: stablehlo.reduce"`},
	{"aten::nonzero_static", "f32[2,3] 4 -1", "4x2xi64", ``},
	{"aten::unique_consecutive", "i64[5]=1,1,2,2,3 false false none", "1xi64, 0xi64, 0xi64", ``},
})

func TestBesselLowerings(t *testing.T) { runLowerings(t, besselLowerings) }
