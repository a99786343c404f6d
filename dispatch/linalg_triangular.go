package dispatch

import (
	"torchtpu/hlo"
)

// triOperands checks a triangular system's coefficient a (square matrices)
// and right-hand side b (matrices whose size along the solved dimension
// matches), and returns both broadcast to their common batch dimensions.
func triOperands(c *Ctx, fn string, ai, bi int, left bool) (*hlo.Value, *hlo.Value, error) {
	am, bm := c.Meta(ai), c.Meta(bi)
	if am.Rank() < 2 || bm.Rank() < 2 {
		return nil, nil, Errorf("%s: The input tensor A must have at least 2 dimensions.", fn)
	}
	if err := luSquareCheck(fn, am, "A"); err != nil {
		return nil, nil, err
	}
	if err := luComplexCheck(fn, "triangular_solve_cpu", true, am); err != nil {
		return nil, nil, err
	}
	if am.DType != bm.DType {
		return nil, nil, Errorf("%s: Expected A and B to have the same dtype, but found A of type %s and B of type %s instead", fn, scalarTypeName(am.DType), scalarTypeName(bm.DType))
	}
	n := am.Sizes[am.Rank()-1]
	solved := bm.Sizes[bm.Rank()-2]
	if !left {
		solved = bm.Sizes[bm.Rank()-1]
	}
	if solved != n {
		if left {
			return nil, nil, Errorf("%s: Incompatible shapes of A and B for the equation AX = B (%s and %s)", fn, dimsX(am.Sizes[am.Rank()-2:]), dimsX(bm.Sizes[bm.Rank()-2:]))
		}
		return nil, nil, Errorf("%s: Incompatible shapes of A and B for the equation XA = B (%s and %s)", fn, dimsX(am.Sizes[am.Rank()-2:]), dimsX(bm.Sizes[bm.Rank()-2:]))
	}
	batch, err := luBroadcastBatch(am.Sizes, bm.Sizes)
	if err != nil {
		return nil, nil, err
	}
	return luExpandBatch(c.B, c.T(ai), batch), luExpandBatch(c.B, c.T(bi), batch), nil
}

// triSolve solves op(a) x = rhs (left) or x op(a) = rhs with equal batch
// dimensions; the triangle of a that is not named by lower is ignored.
func triSolve(b *hlo.Builder, a, rhs *hlo.Value, left, lower, unit, transpose bool) *hlo.Value {
	if rhs.T.NumElements() == 0 || a.T.NumElements() == 0 {
		return b.Constant(rhs.T, 0)
	}
	return b.TriangularSolve(a, rhs, left, lower, unit, transpose)
}

// linalgSolveTriangular is linalg_solve_triangular(A, B, *, upper, left, unitriangular).
func linalgSolveTriangular(c *Ctx) ([]*hlo.Value, error) {
	upper, left, unit := c.Bool(2, false), c.Bool(3, true), c.Bool(4, false)
	a, rhs, err := triOperands(c, "linalg.solve_triangular", 0, 1, left)
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{triSolve(c.B, a, rhs, left, !upper, unit, false)}, nil
}

// triangularSolve is triangular_solve(self, A, upper, transpose, unitriangular):
// it solves op(A) X = self and returns X and a copy of A broadcast to X's batch.
func triangularSolve(c *Ctx) ([]*hlo.Value, error) {
	upper, transpose, unit := c.Bool(2, true), c.Bool(3, false), c.Bool(4, false)
	a, rhs, err := triOperands(c, "triangular_solve", 1, 0, true)
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{triSolve(c.B, a, rhs, true, !upper, unit, transpose), a}, nil
}

func init() {
	def("aten::linalg_solve_triangular", linalgSolveTriangular)
	def("aten::triangular_solve", triangularSolve, "aten::triangular_solve.X")
}
