package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"torchtpu/hlo"
)

// summaryOf summarizes x op x + c for x of type t: the module the recompile
// tests compare.
func summaryOf(t hlo.Type, c float64, op string) *progSig {
	b := hlo.NewBuilder()
	x := b.Param(t)
	b.Param(hlo.T(hlo.F32)) // an unused parameter is left out
	k := b.BroadcastTo(b.Scalar(t.Elem, c), t.Shape)
	var y *hlo.Value
	if op == "add" {
		y = b.Add(x, x)
	} else {
		y = b.Mul(x, x)
	}
	return b.Summarize([]*hlo.Value{b.Add(y, k)})
}

func TestRecompileReasons(t *testing.T) {
	base := summaryOf(hlo.T(hlo.F32, 2, 8), 2, "add")
	cases := []struct {
		sig            *progSig
		reason, detail string
	}{
		{summaryOf(hlo.T(hlo.F32, 4, 8), 2, "add"), "shapes", "input 0 is tensor<4x8xf32>, was tensor<2x8xf32>"},
		{summaryOf(hlo.T(hlo.BF16, 2, 8), 2, "add"), "dtypes", "input 0 is tensor<2x8xbf16>, was tensor<2x8xf32>"},
		{summaryOf(hlo.T(hlo.F32, 2, 8), 3, "add"), "constant", "constant 0 is dense<0x40400000>, was dense<0x40000000>"},
		{summaryOf(hlo.T(hlo.F32, 2, 8), 2, "mul"), "graph", "op 2 is stablehlo.multiply, was stablehlo.add"},
	}
	for _, c := range cases {
		e := New()
		r, _ := e.explainCompile("eager op aten::add.Tensor", base)
		require.Equal(t, "new", r, "the first program of a call site")
		r, d := e.explainCompile("eager op aten::add.Tensor", c.sig)
		require.Equal(t, c.reason, r, "reason for %s", c.detail)
		require.Equal(t, c.detail, d)
		require.Contains(t, Reasons, r)
		r, _ = e.explainCompile("eager op aten::mul.Tensor", c.sig)
		require.Equal(t, "new", r, "another call site starts afresh")
	}
}

func TestRecompileNearestProgram(t *testing.T) {
	e := New()
	site := "step mark aten::mm"
	e.explainCompile(site, summaryOf(hlo.T(hlo.F32, 2, 8), 2, "add"))
	e.explainCompile(site, summaryOf(hlo.T(hlo.F32, 4, 8), 2, "add"))
	// Only the constant differs from the second program: the nearest one.
	r, d := e.explainCompile(site, summaryOf(hlo.T(hlo.F32, 4, 8), 5, "add"))
	require.Equal(t, "constant", r)
	require.Equal(t, "constant 0 is dense<0x40A00000>, was dense<0x40000000>", d)
}

func TestRecompileResultShapes(t *testing.T) {
	e := New()
	site := "eager op aten::arange.start_out"
	iota := func(n int64) *progSig {
		b := hlo.NewBuilder()
		return b.Summarize([]*hlo.Value{b.Iota(hlo.T(hlo.F32, n), 0)})
	}
	e.explainCompile(site, iota(3))
	r, d := e.explainCompile(site, iota(5))
	require.Equal(t, "shapes", r)
	require.Equal(t, "result 0 is tensor<5xf32>, was tensor<3xf32>", d)
}
