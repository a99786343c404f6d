package hlo

import "fmt"

// Cholesky factors the symmetric positive-definite matrices in the last two
// dimensions of a: lower selects L with a = L L^T (else U with a = U^T U).
// Only the selected triangle of a is read; the other triangle of the result
// is unspecified.
func (b *Builder) Cholesky(a *Value, lower bool) *Value {
	if !(a.T.Rank() >= 2 && a.T.Shape[a.T.Rank()-1] == a.T.Shape[a.T.Rank()-2]) {
		failf("cholesky: not square: %v", a.T)
	}
	return b.op("stablehlo.cholesky", a.T, fmt.Sprintf("{lower = %v}", lower), a)
}

// TriangularSolve solves op(a) x = rhs (leftSide) or x op(a) = rhs for x,
// where a holds triangular matrices in its last two dimensions (lower or
// upper triangle read, the diagonal taken as ones when unitDiagonal) and op
// transposes a when transposeA. Leading dimensions of a and rhs must match.
func (b *Builder) TriangularSolve(a, rhs *Value, leftSide, lower, unitDiagonal, transposeA bool) *Value {
	r := a.T.Rank()
	if !(r >= 2 && r == rhs.T.Rank() && a.T.Shape[r-1] == a.T.Shape[r-2]) {
		failf("triangular_solve: bad shapes %v, %v", a.T, rhs.T)
	}
	if a.T.Elem != rhs.T.Elem {
		failf("triangular_solve: element types differ: %v vs %v", a.T, rhs.T)
	}
	t := "NO_TRANSPOSE"
	if transposeA {
		t = "TRANSPOSE"
	}
	attrs := fmt.Sprintf("{left_side = %v, lower = %v, transpose_a = #stablehlo<transpose %s>, unit_diagonal = %v}", leftSide, lower, t, unitDiagonal)
	return b.op("stablehlo.triangular_solve", rhs.T, attrs, a, rhs)
}
