package hlo

import "testing"

func TestReduceXorGolden(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F64, 2, 3))
	bits := b.BitcastConvert(x, U64)
	out := b.Reduce(bits, b.Scalar(U64, 0), ReduceXor, 1)
	text, _ := b.Module([]*Value{out})
	want := `module @torchtpu {
  func.func public @main(%arg0: tensor<2x3xf64>) -> (tensor<2xui64>) {
    %0 = "stablehlo.bitcast_convert"(%arg0) : (tensor<2x3xf64>) -> tensor<2x3xui64>
    %1 = "stablehlo.constant"() {value = dense<0> : tensor<ui64>} : () -> tensor<ui64>
    %2 = "stablehlo.reduce"(%0, %1)({
    ^bb0(%r1_a0: tensor<ui64>, %r1_a1: tensor<ui64>):
      %r1_0 = "stablehlo.xor"(%r1_a0, %r1_a1) : (tensor<ui64>, tensor<ui64>) -> tensor<ui64>
      "stablehlo.return"(%r1_0) : (tensor<ui64>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xui64>, tensor<ui64>) -> tensor<2xui64>
    return %2 : tensor<2xui64>
  }
}
`
	if text != want {
		t.Fatalf("module text:\n%s\nwant:\n%s", text, want)
	}
}
