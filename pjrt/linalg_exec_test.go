package pjrt

import (
	"math"
	"testing"

	"torchtpu/hlo"
)

// TestLinalgOpsExecute checks that the plugin accepts the builder's
// stablehlo.cholesky and stablehlo.triangular_solve text and computes them.
func TestLinalgOpsExecute(t *testing.T) {
	b := hlo.NewBuilder()
	a := b.Param(hlo.T(hlo.F32, 2, 2))
	l := b.Cholesky(a, true)
	rhs := b.Param(hlo.T(hlo.F32, 2, 1))
	x := b.TriangularSolve(l, rhs, true, true, false, false)
	text, _ := b.Module([]*hlo.Value{l, x})
	c := newClient(t, ClientOptions{})
	exe := compile(t, c, text, DefaultCompileOptions())
	res := run(t, exe, []*Buffer{
		upload(t, c, f32Bytes([]float32{4, 2, 2, 5}), F32, []int64{2, 2}, 0),
		upload(t, c, f32Bytes([]float32{2, 5}), F32, []int64{2, 1}, 0),
	}, 0)
	lv := bytesF32(download(t, res[0]))
	xv := bytesF32(download(t, res[1]))
	// L = [[2, 0], [1, 2]]; L x = [2, 5] gives x = [1, 2].
	if math.Abs(float64(lv[0]-2)) > 1e-6 || math.Abs(float64(lv[2]-1)) > 1e-6 || math.Abs(float64(lv[3]-2)) > 1e-6 {
		t.Errorf("L = %v\n%s", lv, text)
	}
	if math.Abs(float64(xv[0]-1)) > 1e-6 || math.Abs(float64(xv[1]-2)) > 1e-6 {
		t.Errorf("x = %v", xv)
	}
}
