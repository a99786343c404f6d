package hlo

import "testing"

func TestRandomGolden(t *testing.T) {
	b := NewBuilder()
	seed := b.Param(T(U64, 2))
	_, bits := b.RngBitGenerator(seed, T(U32, 4))
	idx := b.Iota(T(S64, 4), 0)
	out := b.Sort(0, func(rb *Builder, a []*Value) *Value { return rb.Compare(LT, a[0], a[1]) }, bits, idx)
	sh := b.ShiftRightLogical(bits, b.BroadcastTo(b.Scalar(U32, 8), []int64{4}))
	text, _ := b.Module([]*Value{out[1], sh})
	want := `module @torchtpu {
  func.func public @main(%arg0: tensor<2xui64>) -> (tensor<4xi64>, tensor<4xui32>) {
    %0:2 = "stablehlo.rng_bit_generator"(%arg0) {rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>} : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)
    %1 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4xi64>
    %2:2 = "stablehlo.sort"(%0#1, %1)({
    ^bb0(%r1_a0: tensor<ui32>, %r1_a1: tensor<ui32>, %r1_a2: tensor<i64>, %r1_a3: tensor<i64>):
      %r1_0 = "stablehlo.compare"(%r1_a0, %r1_a1) {compare_type = #stablehlo<comparison_type UNSIGNED>, comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
      "stablehlo.return"(%r1_0) : (tensor<i1>) -> ()
    }) {dimension = 0 : i64, is_stable = true} : (tensor<4xui32>, tensor<4xi64>) -> (tensor<4xui32>, tensor<4xi64>)
    %3 = "stablehlo.constant"() {value = dense<8> : tensor<ui32>} : () -> tensor<ui32>
    %4 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<ui32>) -> tensor<4xui32>
    %5 = "stablehlo.shift_right_logical"(%0#1, %4) : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
    return %2#1, %5 : tensor<4xi64>, tensor<4xui32>
  }
}
`
	if text != want {
		t.Fatalf("module text:\n%s\nwant:\n%s", text, want)
	}
}
