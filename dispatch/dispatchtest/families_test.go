package dispatchtest

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"torchtpu/dispatch"
	"torchtpu/engine"
)

// x is the 2x3 input most cases share.
var x = []float64{-1.5, 0, 0.5, 2, 3, -2.25}

func reversed(xs []float64) []float64 {
	out := slices.Clone(xs)
	slices.Reverse(out)
	return out
}

func mapped(f func(float64) float64, xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, v := range xs {
		out[i] = f(v)
	}
	return out
}

// softmaxRows is softmax over the last dimension of a rows x cols matrix.
func softmaxRows(xs []float64, cols int) []float64 {
	out := make([]float64, len(xs))
	for r := 0; r < len(xs); r += cols {
		m, s := math.Inf(-1), 0.0
		for _, v := range xs[r : r+cols] {
			m = math.Max(m, v)
		}
		for _, v := range xs[r : r+cols] {
			s += math.Exp(v - m)
		}
		for i, v := range xs[r : r+cols] {
			out[r+i] = math.Exp(v-m) / s
		}
	}
	return out
}

// layerNormRows normalizes each row of a rows x cols matrix (eps 1e-5).
func layerNormRows(xs []float64, cols int) []float64 {
	out := make([]float64, len(xs))
	for r := 0; r < len(xs); r += cols {
		mean, v := 0.0, 0.0
		for _, a := range xs[r : r+cols] {
			mean += a / float64(cols)
		}
		for _, a := range xs[r : r+cols] {
			v += (a - mean) * (a - mean) / float64(cols)
		}
		for i, a := range xs[r : r+cols] {
			out[r+i] = (a - mean) / math.Sqrt(v+1e-5)
		}
	}
	return out
}

func mmRef() []float64 {
	a := mat.NewDense(2, 3, x)
	b := mat.NewDense(3, 2, []float64{1, 2, 3, 4, 5, 6})
	var c mat.Dense
	c.Mul(a, b)
	return c.RawMatrix().Data
}

func choleskyRef() []float64 {
	s := mat.NewSymDense(3, []float64{4, 2, 0.4, 2, 5, 1, 0.4, 1, 3})
	var ch mat.Cholesky
	if !ch.Factorize(s) {
		panic("not positive definite")
	}
	var l mat.TriDense
	ch.LTo(&l)
	return mat.DenseCopyOf(&l).RawMatrix().Data
}

type valueCase struct {
	family, op string
	args       []any
	want       host // the first result
	tol        float64
}

var valueCases = []valueCase{
	{"unary", "aten::exp", []any{f32(dims(2, 3), x...)}, f32(dims(2, 3), mapped(math.Exp, x)...), 1e-6},
	{"special", "aten::erf", []any{f32(dims(2, 3), x...)}, f32(dims(2, 3), mapped(math.Erf, x)...), 1e-6},
	{"binary", "aten::add.Tensor", []any{f32(dims(2, 3), x...), f32(dims(3), 10, 20, 30), scalar(2)},
		f32(dims(2, 3), x[0]+20, x[1]+40, x[2]+60, x[3]+20, x[4]+40, x[5]+60), 0},
	{"binary", "aten::div.Tensor_mode", []any{f32(dims(4), 7, -7, 7, -7), f32(dims(4), 2, 2, -2, -2), strArg("floor")},
		f32(dims(4), 3, -4, -4, 3), 0},
	{"compare", "aten::gt.Scalar", []any{f32(dims(2, 3), x...), scalar(0.25)}, host{dispatch.Bool, dims(2, 3), []float64{0, 0, 1, 1, 1, 0}}, 0},
	{"reduce", "aten::sum.dim_IntList", []any{f32(dims(2, 3), x...), intsArg(1), boolArg(false), none},
		f32(dims(2), x[0]+x[1]+x[2], x[3]+x[4]+x[5]), 1e-6},
	{"reduce", "aten::var.correction", []any{f32(dims(4), 1, 2, 3, 4), none, scalar(1), boolArg(false)}, f32(nil, 5.0/3), 1e-6},
	{"sort", "aten::sort", []any{f32(dims(2, 3), x...), intArg(1), boolArg(true)}, f32(dims(2, 3), 0.5, 0, -1.5, 3, 2, -2.25), 0},
	{"scan", "aten::cumsum", []any{i64(dims(5), 1, 2, 3, 4, 5), intArg(0), none}, i64(dims(5), 1, 3, 6, 10, 15), 0},
	{"shape", "aten::flip", []any{f32(dims(2, 3), x...), intsArg(0, 1)}, f32(dims(2, 3), reversed(x)...), 0},
	{"shape", "aten::cat", []any{[]host{f32(dims(1, 2), 1, 2), f32(dims(2, 2), 3, 4, 5, 6)}, intArg(0)}, f32(dims(3, 2), 1, 2, 3, 4, 5, 6), 0},
	{"indexing", "aten::index_select", []any{f32(dims(2, 3), x...), intArg(1), i64(dims(2), 2, 0)},
		f32(dims(2, 2), x[2], x[0], x[5], x[3]), 0},
	{"indexing", "aten::scatter_add", []any{f32(dims(3), 0, 0, 0), intArg(0), i64(dims(4), 0, 2, 0, 1), f32(dims(4), 1, 2, 3, 4)},
		f32(dims(3), 4, 4, 2), 0},
	{"softmax", "aten::_softmax", []any{f32(dims(2, 3), x...), intArg(1), boolArg(false)}, f32(dims(2, 3), softmaxRows(x, 3)...), 1e-6},
	{"norm", "aten::native_layer_norm", []any{f32(dims(2, 3), x...), intsArg(3), none, none, doubleArg(1e-5)},
		f32(dims(2, 3), layerNormRows(x, 3)...), 1e-5},
	{"matmul", "aten::mm", []any{f32(dims(2, 3), x...), f32(dims(3, 2), 1, 2, 3, 4, 5, 6)}, f32(dims(2, 2), mmRef()...), 1e-6},
	{"pool", "aten::avg_pool2d", []any{f32(dims(1, 1, 2, 4), 1, 2, 3, 4, 5, 6, 7, 8), intsArg(2, 2), intsArg(2, 2), intsArg(0, 0), boolArg(false), boolArg(true), none},
		f32(dims(1, 1, 1, 2), 3.5, 5.5), 1e-6},
	{"conv", "aten::convolution", []any{f32(dims(1, 1, 4), 1, 2, 3, 4), f32(dims(1, 1, 2), 1, -1), f32(dims(1), 0.5), intsArg(1), intsArg(0), intsArg(1), boolArg(false), intsArg(0), intArg(1)},
		f32(dims(1, 1, 3), -0.5, -0.5, -0.5), 0},
	{"loss", "aten::mse_loss", []any{f32(dims(4), 1, 2, 3, 4), f32(dims(4), 0, 2, 5, 4), intArg(1)}, f32(nil, 5.0/4), 1e-6},
	{"linalg", "aten::linalg_cholesky_ex", []any{f32(dims(3, 3), 4, 2, 0.4, 2, 5, 1, 0.4, 1, 3), boolArg(false), boolArg(false)},
		f32(dims(3, 3), choleskyRef()...), 1e-5},
}

// TestFamilyValues runs one case per op family on the plugin, in strict and
// fused mode, and compares the first result with the Go reference.
func TestFamilyValues(t *testing.T) {
	for _, mode := range []engine.Mode{engine.ModeStrict, engine.ModeFused} {
		e := newEngine(t, mode)
		for _, c := range valueCases {
			outs := run(t, e, c.op, c.args...)
			got := outs[0]
			if got.d != c.want.d || !slices.Equal(got.sizes, c.want.sizes) {
				t.Errorf("%s %s (%s): result %s %v, want %s %v", c.family, c.op, mode, got.d, got.sizes, c.want.d, c.want.sizes)
				continue
			}
			if !near(got.vals, c.want.vals, c.tol) {
				t.Errorf("%s %s (%s): values %v, want %v", c.family, c.op, mode, got.vals, c.want.vals)
			}
		}
	}
}
