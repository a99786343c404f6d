package hlo

import (
	"strings"
	"testing"
)

func TestScanGolden(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F32, 2, 3))
	s := b.Scan([]*Value{x}, []*Value{b.Scalar(F32, 0)}, 1, func(rb *Builder, a []*Value) []*Value {
		return []*Value{rb.Add(a[0], a[1])}
	})
	text, _ := b.Module(s)
	want := `    %1 = "stablehlo.reduce_window"(%arg0, %0)({
    ^bb0(%r1_a0: tensor<f32>, %r1_a1: tensor<f32>):
      %r1_0 = "stablehlo.add"(%r1_a0, %r1_a1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%r1_0) : (tensor<f32>) -> ()
    }) {base_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [2, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 1, 3>, window_strides = array<i64: 1, 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
`
	if !strings.Contains(text, want) {
		t.Fatalf("module text:\n%s\nwant:\n%s", text, want)
	}
}

func TestScanPairs(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F32, 4))
	i := b.Iota(T(S64, 4), 0)
	outs := b.Scan([]*Value{x, i}, []*Value{b.Scalar(F32, negInf), b.ConstantInt(T(S64), -1)}, 0,
		func(rb *Builder, a []*Value) []*Value {
			take := rb.Compare(GE, a[2], a[0])
			return []*Value{rb.Select(take, a[2], a[0]), rb.Select(take, a[3], a[1])}
		})
	if len(outs) != 2 || outs[0].T.String() != "tensor<4xf32>" || outs[1].T.String() != "tensor<4xi64>" {
		t.Fatalf("outs %v", outs)
	}
	text, _ := b.Module(outs)
	if !strings.Contains(text, "%3:2 = \"stablehlo.reduce_window\"(%arg0, %0, %1, %2)") {
		t.Fatalf("module text:\n%s", text)
	}
}
