package dispatch

import (
	"fmt"

	"torchtpu/hlo"
)

// luSolveWith solves with the factorization A = P L U, given as lu and the
// permutation perm (row i of L U is row perm[i] of A), for the right-hand
// sides rhs (same batch dimensions): A X = rhs, or A^T X = rhs with adjoint;
// with !left, X A = rhs or X A^T = rhs.
func luSolveWith(b *hlo.Builder, lu, perm, rhs *hlo.Value, left, adjoint bool) *hlo.Value {
	if !left {
		return luMT(b, luSolveWith(b, lu, perm, luMT(b, rhs), true, !adjoint))
	}
	p := luPermMatrix(b, perm, lu.T.Elem)
	if !adjoint {
		// X = U^-1 L^-1 P^T rhs.
		y := luMatmul(b, luMT(b, p), rhs)
		y = triSolve(b, lu, y, true, true, true, false)
		return triSolve(b, lu, y, true, false, false, false)
	}
	// A^T = U^T L^T P^T, so X = P L^-T U^-T rhs.
	y := triSolve(b, lu, rhs, true, false, false, true)
	y = triSolve(b, lu, y, true, true, true, true)
	return luMatmul(b, p, y)
}

// linalgLuSolve is linalg_lu_solve(LU, pivots, B, *, left, adjoint).
func linalgLuSolve(c *Ctx) ([]*hlo.Value, error) {
	lm, pm, bm := c.Meta(0), c.Meta(1), c.Meta(2)
	left, adjoint := c.Bool(3, true), c.Bool(4, false)
	if err := luSquareCheck("linalg.lu_solve", lm, "LU"); err != nil {
		return nil, err
	}
	if err := luFloatCheck("linalg.lu_solve", lm); err != nil {
		return nil, err
	}
	if bm.Rank() < 2 {
		return nil, Errorf("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
	}
	if lm.DType != bm.DType {
		return nil, Errorf("linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type %s and B of type %s instead", scalarTypeName(lm.DType), scalarTypeName(bm.DType))
	}
	if pm.DType != Int32 {
		return nil, Errorf("linalg.lu_solve: pivots should be a Tensor of scalar type Int")
	}
	n := lm.Sizes[lm.Rank()-1]
	solved := bm.Sizes[bm.Rank()-2]
	if !left {
		solved = bm.Sizes[bm.Rank()-1]
	}
	if solved != n {
		if left {
			return nil, Errorf("linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B (%s and %s)", dimsX(lm.Sizes[lm.Rank()-2:]), dimsX(bm.Sizes[bm.Rank()-2:]))
		}
		return nil, Errorf("linalg.lu_solve: Incompatible shapes of A and B for the equation XA = B (%s and %s)", dimsX(lm.Sizes[lm.Rank()-2:]), dimsX(bm.Sizes[bm.Rank()-2:]))
	}
	batch, err := luBroadcastBatch(lm.Sizes, bm.Sizes)
	if err != nil {
		return nil, err
	}
	lu := luExpandBatch(c.B, c.T(0), batch)
	piv := c.B.BroadcastTo(c.T(1), luWith(batch, pm.Sizes[pm.Rank()-1]))
	rhs := luExpandBatch(c.B, c.T(2), batch)
	perm := luPermFromPivots(c.B, piv, n)
	return []*hlo.Value{luSolveWith(c.B, lu, perm, rhs, left, adjoint)}, nil
}

// solveIsVectorRHS is PyTorch's linalg_solve_is_vector_rhs.
func solveIsVectorRHS(a, b TensorMeta) bool {
	if b.Rank() == 1 {
		return true
	}
	if a.Rank()-1 != b.Rank() {
		return false
	}
	for i, s := range b.Sizes {
		if a.Sizes[i] != s {
			return false
		}
	}
	return true
}

// solveCore solves A X = rhs (left) or X A = rhs as PyTorch's linalg.solve
// does: it factors A and solves with the factors. It returns the solution
// (rhs broadcast against A's batch) and the factorization.
func solveCore(b *hlo.Builder, a, rhs *hlo.Value, left bool) (*hlo.Value, luResult, error) {
	f := luFactor(b, a)
	batch, err := luBroadcastBatch(a.T.Shape, rhs.T.Shape)
	if err != nil {
		return nil, f, err
	}
	r := a.T.Rank()
	n := a.T.Shape[r-1]
	lu := luExpandBatch(b, f.LU, batch)
	perm := b.BroadcastTo(f.Perm, luWith(batch, n))
	x := luSolveWith(b, lu, perm, luExpandBatch(b, rhs, batch), left, false)
	return x, f, nil
}

// linalgSolveEx is _linalg_solve_ex(A, B, *, left, check_errors) -> (result, LU, pivots, info).
func linalgSolveEx(c *Ctx) ([]*hlo.Value, error) {
	am, bm := c.Meta(0), c.Meta(1)
	left := c.Bool(2, true)
	if err := luSquareCheck("linalg.solve", am, "A"); err != nil {
		return nil, err
	}
	if err := luDTypeCheck("linalg.solve", "lu_cpu", false, am); err != nil {
		return nil, err
	}
	if am.DType != bm.DType {
		return nil, Errorf("linalg.solve: Expected A and B to have the same dtype, but found A of type %s and B of type %s instead", scalarTypeName(am.DType), scalarTypeName(bm.DType))
	}
	vector := solveIsVectorRHS(am, bm)
	rhs := c.T(1)
	if vector {
		rhs = c.B.Reshape(rhs, append(append([]int64{}, bm.Sizes...), 1)...)
	}
	if rhs.T.Rank() < 2 {
		return nil, Errorf("linalg.solve: The input tensor B must have at least 2 dimensions.")
	}
	n := am.Sizes[am.Rank()-1]
	rr := rhs.T.Rank()
	solved := rhs.T.Shape[rr-2]
	if !left {
		solved = rhs.T.Shape[rr-1]
	}
	if solved != n {
		if vector {
			return nil, Errorf("linalg.solve: Incompatible shapes of A and B for the equation AX = B (%s and %s)", dimsX(am.Sizes[am.Rank()-2:]), dimsX(rhs.T.Shape[rr-2:]))
		}
		eq := "AX = B"
		if !left {
			eq = "XA = B"
		}
		return nil, Errorf("linalg.solve: Incompatible shapes of A and B for the equation %s (%s and %s)", eq, dimsX(am.Sizes[am.Rank()-2:]), dimsX(rhs.T.Shape[rr-2:]))
	}
	if c.Bool(3, false) {
		err := luRaise(c, am.Rank() > 2, func() *hlo.Value { return luFactor(c.B, c.T(0)).Info }, func(int64) string {
			return "torch.linalg.solve_ex: The solver failed because the input matrix is singular."
		})
		if err != nil {
			return nil, err
		}
		rhs = c.T(1)
		if vector {
			rhs = c.B.Reshape(rhs, append(append([]int64{}, bm.Sizes...), 1)...)
		}
	}
	x, f, err := solveCore(c.B, c.T(0), rhs, left)
	if err != nil {
		return nil, err
	}
	if vector {
		x = c.B.Reshape(x, x.T.Shape[:x.T.Rank()-1]...)
	}
	return []*hlo.Value{x, f.LU, f.Pivots, f.Info}, nil
}

// linalgInvEx is linalg_inv_ex(A, *, check_errors) -> (inverse, info): the
// solution of A X = I.
func linalgInvEx(c *Ctx) ([]*hlo.Value, error) {
	am := c.Meta(0)
	if err := luSquareCheck("linalg.inv", am, "A"); err != nil {
		return nil, err
	}
	if err := luFloatCheck("linalg.inv", am); err != nil {
		return nil, err
	}
	if c.Bool(1, false) {
		err := luRaise(c, am.Rank() > 2, func() *hlo.Value { return luFactor(c.B, c.T(0)).Info }, func(v int64) string {
			return fmt.Sprintf("linalg.inv_ex: The diagonal element %d is zero, the inversion could not be completed because the input matrix is singular.", v)
		})
		if err != nil {
			return nil, err
		}
	}
	a := c.T(0)
	x, f, err := solveCore(c.B, a, luEye(c.B, a.T.Elem, a.T.Shape), true)
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{x, f.Info}, nil
}

func init() {
	def("aten::linalg_lu_solve", linalgLuSolve)
	def("aten::_linalg_solve_ex", linalgSolveEx, "aten::_linalg_solve_ex.result").Needs = readsResults
	def("aten::linalg_inv_ex", linalgInvEx, "aten::linalg_inv_ex.inverse").Needs = readsResults
}
