package hlo

import (
	"strings"
	"testing"
)

func TestLinalgGolden(t *testing.T) {
	b := NewBuilder()
	a := b.Param(T(F32, 2, 3, 3))
	r := b.Param(T(F32, 2, 3, 4))
	l := b.Cholesky(a, true)
	x := b.TriangularSolve(l, r, true, true, false, true)
	text, _ := b.Module([]*Value{x})
	for _, want := range []string{
		`%0 = "stablehlo.cholesky"(%arg0) {lower = true} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>`,
		`%1 = "stablehlo.triangular_solve"(%0, %arg1) {left_side = true, lower = true, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = false} : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>`,
	} {
		if !strings.Contains(text, want) {
			t.Fatalf("module text lacks %q:\n%s", want, text)
		}
	}
}
