package hlo

import (
	"strings"
	"testing"
)

func TestModuleGolden(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F32, 2, 3))
	y := b.Param(T(F32, 3))
	unused := b.Param(T(S64, 4))
	dead := b.Neg(x)
	_ = dead
	yb := b.BroadcastInDim(y, []int64{2, 3}, []int64{1})
	s := b.Add(x, yb)
	one := b.Scalar(F32, 1)
	r := b.Reduce(s, one, ReduceSum, 1)
	_ = unused
	text, used := b.Module([]*Value{r, s})
	want := `module @torchtpu {
  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>) -> (tensor<2xf32>, tensor<2x3xf32>) {
    %0 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64: 1>} : (tensor<3xf32>) -> tensor<2x3xf32>
    %1 = "stablehlo.add"(%arg0, %0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = "stablehlo.constant"() {value = dense<0x3F800000> : tensor<f32>} : () -> tensor<f32>
    %3 = "stablehlo.reduce"(%1, %2)({
    ^bb0(%r1_a0: tensor<f32>, %r1_a1: tensor<f32>):
      %r1_0 = "stablehlo.add"(%r1_a0, %r1_a1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%r1_0) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    return %3, %1 : tensor<2xf32>, tensor<2x3xf32>
  }
}
`
	if text != want {
		t.Fatalf("module text:\n%s\nwant:\n%s", text, want)
	}
	if len(used) != 2 || used[0] != 0 || used[1] != 1 {
		t.Fatalf("used params = %v, want [0 1]", used)
	}
	// The same graph built again prints the same bytes.
	b2 := NewBuilder()
	x2 := b2.Param(T(F32, 2, 3))
	y2 := b2.Param(T(F32, 3))
	b2.Param(T(S64, 4))
	s2 := b2.Add(x2, b2.BroadcastInDim(y2, []int64{2, 3}, []int64{1}))
	r2 := b2.Reduce(s2, b2.Scalar(F32, 1), ReduceSum, 1)
	if text2, _ := b2.Module([]*Value{r2, s2}); text2 != text {
		t.Fatalf("rebuilt module differs:\n%s", text2)
	}
}

func TestLiterals(t *testing.T) {
	cases := []struct {
		e    Elem
		v    float64
		want string
	}{
		{F32, 1, "0x3F800000"},
		{F64, -2, "0xC000000000000000"},
		{F16, 1, "0x3C00"},
		{F16, 65504, "0x7BFF"},
		{F16, 1e-7, "0x0002"},
		{BF16, 1, "0x3F80"},
		{BF16, 1.00390625, "0x3F80"}, // ties to even
		{S64, -7, "-7"},
		{Pred, 1, "true"},
	}
	for _, c := range cases {
		if got := literal(c.e, c.v); got != c.want {
			t.Errorf("literal(%s, %v) = %s, want %s", c.e, c.v, got, c.want)
		}
	}
}

func TestShapeInference(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F32, 2, 3, 4))
	y := b.Param(T(F32, 2, 4, 5))
	if got := b.DotGeneral(x, y, []int64{0}, []int64{0}, []int64{2}, []int64{1}).T.String(); got != "tensor<2x3x5xf32>" {
		t.Errorf("dot_general type %s", got)
	}
	if got := b.Transpose(x, 2, 0, 1).T.String(); got != "tensor<4x2x3xf32>" {
		t.Errorf("transpose type %s", got)
	}
	if got := b.Slice(x, []int64{0, 1, 0}, []int64{2, 3, 4}, []int64{1, 1, 3}).T.String(); got != "tensor<2x2x2xf32>" {
		t.Errorf("slice type %s", got)
	}
	if got := b.Concatenate(1, x, x).T.String(); got != "tensor<2x6x4xf32>" {
		t.Errorf("concatenate type %s", got)
	}
	v, i := b.ReduceArg(x, b.Iota(T(S64, 2, 3, 4), 1), 1, GT)
	if v.T.String() != "tensor<2x4xf32>" || i.T.String() != "tensor<2x4xi64>" {
		t.Errorf("reduce arg types %s %s", v.T, i.T)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "operand types differ") {
			t.Errorf("add of mismatched types: recovered %v", r)
		}
	}()
	b.Add(x, y)
}

func TestChloGolden(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F32, 2))
	y := b.Param(T(F32, 2))
	r := b.Chlo("polygamma", x, b.Chlo("lgamma", y))
	text, _ := b.Module([]*Value{r})
	for _, want := range []string{
		`%0 = "chlo.lgamma"(%arg1) : (tensor<2xf32>) -> tensor<2xf32>`,
		`%1 = "chlo.polygamma"(%arg0, %0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>`,
	} {
		if !strings.Contains(text, want) {
			t.Fatalf("module text lacks %q:\n%s", want, text)
		}
	}
}
