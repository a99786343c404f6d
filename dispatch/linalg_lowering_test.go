package dispatch

import "testing"

// linalgLowerings covers the linalg_*.go rules: factorizations of real
// matrices lowered as loops over the builder's primitives.
var linalgLowerings = family("linalg", []lowering{
	{"aten::linalg_cholesky_ex", "f32[3,3] false false", "3x3xf32, i32", `CHECK: stablehlo.while"; CHECK: stablehlo.sqrt"`},
	{"aten::linalg_cholesky_ex", "f32[2,3] false false", "error: A must be batches of square matrices", ""},
	{"aten::cholesky_inverse", "f32[3,3] false", "3x3xf32", ``},
	{"aten::_cholesky_solve_helper", "f32[3,2] f32[3,3] false", "3x2xf32", `CHECK: stablehlo.triangular_solve"`},
	{"aten::linalg_inv_ex", "f32[2,3,3] false", "2x3x3xf32, 2xi32", ``},
	{"aten::linalg_qr", "f32[4,3] 'reduced'", "4x3xf32, 3x3xf32", ``},
	{"aten::linalg_cross", "f32[2,3] f32[2,3] -1", "2x3xf32", `CHECK: stablehlo.slice"`},
	{"aten::linalg_cross", "f32[2,4] f32[2,4] -1", "error: linalg.cross: inputs dimension -1 must have length 3. Got 4 and 4", ""},
	{"aten::linalg_solve_triangular", "f32[3,3] f32[3,2] true true false", "3x2xf32", `CHECK: stablehlo.triangular_solve"`},
	{"aten::triangular_solve", "f32[3,2] f32[3,3] true false false", "3x2xf32, 3x3xf32", `CHECK: stablehlo.triangular_solve"`},
	{"aten::_linalg_det", "f32[3,3]", "f32, 3x3xf32, 3xi32", ``},
	{"aten::_linalg_slogdet", "f32[3,3]", "f32, f32, 3x3xf32, 3xi32", ``},
	{"aten::linalg_matrix_exp", "f32[3,3]", "3x3xf32", `CHECK: stablehlo.dot_general"`},
	{"aten::linalg_lu_factor_ex", "f32[3,3] true false", "3x3xf32, 3xi32, i32", ``},
	{"aten::linalg_lu", "f32[3,3] true", "3x3xf32, 3x3xf32, 3x3xf32", ``},
	{"aten::linalg_lu_solve", "f32[3,3] i32[3] f32[3,2] true false", "3x2xf32", ``},
	{"aten::lu_unpack", "f32[3,3] i32[3] true true", "3x3xf32, 3x3xf32, 3x3xf32", ``},
	{"aten::_linalg_solve_ex", "f32[3,3] f32[3,2] true false", "3x2xf32, 3x3xf32, 3xi32, i32", ``},
	{"aten::_linalg_eigh", "f32[3,3] 'L' true", "3xf32, 3x3xf32", ``},
	{"aten::_linalg_svd", "f32[4,3] false true none", "4x3xf32, 3xf32, 3x3xf32", ``},
	{"aten::geqrf", "f32[4,3]", "4x3xf32, 3xf32", ``},
	{"aten::linalg_householder_product", "f32[4,3] f32[3]", "4x3xf32", ``},
})

func TestLinalgLowerings(t *testing.T) { runLowerings(t, linalgLowerings) }
