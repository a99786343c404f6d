package dispatch

import "testing"

// specialLowerings covers special.go, binary_special.go and the orthogonal
// polynomials of special_poly.go: float functions promote integers to the
// default float dtype.
var specialLowerings = family("special", []lowering{
	{"aten::acos", "f32[3]", "3xf32", `CHECK: chlo.acos"`},
	{"aten::acosh", "f32[3]", "3xf32", `CHECK: chlo.acosh"`},
	{"aten::angle", "f32[3]", "3xf32", `CHECK: stablehlo.select"`},
	{"aten::angle", "c64[3]", "3xf32", `CHECK: stablehlo.atan2"`},
	{"aten::asin", "i32[3]", "3xf32", `CHECK: stablehlo.convert"; CHECK-SAME: -> tensor<3xf32>; CHECK: chlo.asin"`},
	{"aten::asinh", "f64[3]", "3xf64", `CHECK: chlo.asinh"`},
	{"aten::atan", "f32[3]", "3xf32", `CHECK: chlo.atan"`},
	{"aten::atanh", "f32[3]", "3xf32", `CHECK: chlo.atanh"`},
	{"aten::cosh", "f16[3]", "3xf16", `CHECK: stablehlo.convert"; CHECK-SAME: -> tensor<3xf32>; CHECK: chlo.cosh"; CHECK: stablehlo.convert"; CHECK-SAME: -> tensor<3xf16>`},
	{"aten::digamma", "f32[3]", "3xf32", `CHECK: stablehlo.select"`},
	{"aten::erfc", "f32[3]", "3xf32", `CHECK: chlo.erfc"`},
	{"aten::erfinv", "f32[3]", "3xf32", `CHECK: chlo.erf_inv"`},
	{"aten::exp2", "i64[3]", "3xf32", `CHECK: stablehlo.power"`},
	{"aten::frac", "f32[3]", "3xf32", `CHECK: stablehlo.subtract"`},
	{"aten::frac", "i32[3]", "error: not implemented for 'Int'", ""},
	{"aten::lgamma", "f32[3]", "3xf32", `CHECK: chlo.lgamma"`},
	{"aten::logit", "f32[3] 0.01", "3xf32", `CHECK: stablehlo.maximum"; CHECK: stablehlo.minimum"; CHECK: stablehlo.log"`},
	{"aten::logit", "f32[3] none", "3xf32", `CHECK-NOT: stablehlo.maximum"; CHECK: stablehlo.log"`},
	{"aten::mvlgamma", "f32[3] 2", "3xf32", `CHECK: chlo.lgamma"; CHECK: chlo.lgamma"`},
	{"aten::polygamma", "1 f32[3]", "3xf32", ``},
	{"aten::sgn", "c64[3]", "3xcomplex<f32>", `CHECK: stablehlo.abs"; CHECK: stablehlo.divide"`},
	{"aten::signbit", "f32[3]", "3xi1", `CHECK: stablehlo.bitcast_convert"`},
	{"aten::sinc", "f32[3]", "3xf32", `CHECK: stablehlo.sine"`},
	{"aten::sinh", "f32[3]", "3xf32", `CHECK: chlo.sinh"`},
	{"aten::special_entr", "f32[3]", "3xf32", `CHECK: stablehlo.log"`},
	{"aten::special_ndtr", "f32[3]", "3xf32", ``},
	{"aten::special_ndtri", "f64[3]", "3xf64", `CHECK: chlo.erf_inv"`},
	{"aten::copysign.Scalar", "f32[3] #-1", "3xf32", `CHECK: stablehlo.select"`},
	{"aten::copysign.Tensor", "i32[3] f32[3]", "3xf32", ``},
	{"aten::floor_divide.Scalar", "i32[3] #2", "3xi32", `CHECK: stablehlo.divide"`},
	{"aten::floor_divide", "f32[3] f32[3]", "3xf32", `CHECK: stablehlo.floor"`},
	{"aten::fmax", "f32[3] f32[3]", "3xf32", `CHECK: stablehlo.select"`},
	{"aten::fmin", "f32[3] f32[3]", "3xf32", `CHECK: stablehlo.select"`},
	{"aten::heaviside", "f32[3] f32[3]", "3xf32", `CHECK: stablehlo.select"`},
	{"aten::heaviside", "f32[3] i32[3]", "error: heaviside is not yet implemented for tensors with different dtypes", ""},
	{"aten::hypot", "f32[3] f32[3]", "3xf32", `CHECK: stablehlo.sqrt"`},
	{"aten::logaddexp2", "f32[3] f32[3]", "3xf32", `CHECK: stablehlo.maximum"`},
	{"aten::logaddexp", "f32[3] f32[3]", "3xf32", `CHECK: stablehlo.log_plus_one"`},
	{"aten::nextafter", "f32[3] f32[3]", "3xf32", `CHECK: chlo.next_after"`},
	{"aten::rsub.Tensor", "f32[3] f32[3] #2", "3xf32", `CHECK: stablehlo.subtract"`},
	{"aten::special_xlog1py.other_scalar", "f32[3] #1", "3xf32", `CHECK: stablehlo.log_plus_one"`},
	{"aten::special_xlog1py.self_scalar", "#1 f32[3]", "3xf32", `CHECK: stablehlo.log_plus_one"`},
	{"aten::special_xlog1py", "f32[3] f32[3]", "3xf32", `CHECK: stablehlo.log_plus_one"`},
	{"aten::special_zeta.other_scalar", "f32[3] #2", "3xf32", ``},
	{"aten::special_zeta.self_scalar", "#2 f32[3]", "3xf32", ``},
	{"aten::special_zeta", "f64[3] f64[3]", "3xf64", ``},
	{"aten::xlogy.Scalar_Other", "f32[3] #2", "3xf32", `CHECK: stablehlo.log"`},
	{"aten::xlogy.Scalar_Self", "#2 f32[3]", "3xf32", `CHECK: stablehlo.log"`},
	{"aten::xlogy.Tensor", "i32[3] i32[3]", "3xf32", `CHECK: stablehlo.log"`},
})

func TestSpecialLowerings(t *testing.T) { runLowerings(t, specialLowerings) }

// polyLowerings covers special_poly.go: each polynomial takes x and n as
// tensors or one of them as a number, and iterates a recurrence in a loop.
var polyLowerings = family("special_poly", polyCases())

func polyCases() []lowering {
	var cs []lowering
	for _, p := range []string{"chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
		"chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
		"legendre_polynomial_p", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
		"shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w"} {
		op := "aten::special_" + p
		cs = append(cs,
			lowering{op, "f32[2,3] f32[3]", "2x3xf32", `CHECK: stablehlo.while"`},
			lowering{op + ".n_scalar", "f64[3] #4", "3xf64", ``},
			lowering{op + ".x_scalar", "#0.5 f32[3]", "3xf32", ``})
	}
	return cs
}

func TestPolyLowerings(t *testing.T) { runLowerings(t, polyLowerings) }
