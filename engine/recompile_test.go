package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

const modA = `module @torchtpu {
  func.func public @main(%arg0: tensor<2x8xf32>, %arg1: tensor<f32>) -> (tensor<2x8xf32>) {
    %0 = "stablehlo.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.add"(%arg0, %arg0) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  }
}`

func TestRecompileReasons(t *testing.T) {
	shapes := `module @torchtpu {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<f32>) -> (tensor<4x8xf32>) {
    %0 = "stablehlo.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.add"(%arg0, %arg0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  }
}`
	dtypes := `module @torchtpu {
  func.func public @main(%arg0: tensor<2x8xbf16>, %arg1: tensor<f32>) -> (tensor<2x8xbf16>) {
    %0 = "stablehlo.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.add"(%arg0, %arg0) : (tensor<2x8xbf16>, tensor<2x8xbf16>) -> tensor<2x8xbf16>
  }
}`
	constant := `module @torchtpu {
  func.func public @main(%arg0: tensor<2x8xf32>, %arg1: tensor<f32>) -> (tensor<2x8xf32>) {
    %0 = "stablehlo.constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.add"(%arg0, %arg0) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  }
}`
	ops := `module @torchtpu {
  func.func public @main(%arg0: tensor<2x8xf32>, %arg1: tensor<f32>) -> (tensor<2x8xf32>) {
    %0 = "stablehlo.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.multiply"(%arg0, %arg0) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  }
}`
	cases := []struct {
		text, reason, detail string
	}{
		{shapes, "shapes", "input 0 is tensor<4x8xf32>, was tensor<2x8xf32>"},
		{dtypes, "dtypes", "input 0 is tensor<2x8xbf16>, was tensor<2x8xf32>"},
		{constant, "a constant", "constant 0 is dense<3.0>, was dense<2.0>"},
		{ops, "op sequence", "op 1 is stablehlo.multiply, was stablehlo.add"},
	}
	for _, c := range cases {
		e := New()
		r, _ := e.explainCompile("eager op aten::add.Tensor", modA)
		require.Equal(t, "new", r, "the first program of a call site")
		r, d := e.explainCompile("eager op aten::add.Tensor", c.text)
		require.Equal(t, c.reason, r, "reason for %s", c.detail)
		require.Equal(t, c.detail, d)
		r, _ = e.explainCompile("eager op aten::mul.Tensor", c.text)
		require.Equal(t, "new", r, "another call site starts afresh")
	}
}

func TestRecompileNearestProgram(t *testing.T) {
	e := New()
	site := "step mark aten::mm"
	e.explainCompile(site, modA)
	shapes := `module @torchtpu {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<f32>) -> (tensor<4x8xf32>) {
    %0 = "stablehlo.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.add"(%arg0, %arg0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  }
}`
	e.explainCompile(site, shapes)
	// Only the constant differs from the second program: the nearest one.
	constant := `module @torchtpu {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<f32>) -> (tensor<4x8xf32>) {
    %0 = "stablehlo.constant"() {value = dense<5.0> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.add"(%arg0, %arg0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  }
}`
	r, d := e.explainCompile(site, constant)
	require.Equal(t, "a constant", r)
	require.Equal(t, "constant 0 is dense<5.0>, was dense<2.0>", d)
}

func TestRecompileResultShapes(t *testing.T) {
	e := New()
	site := "eager op aten::arange.start_out"
	mod := func(n string) string {
		return `module @torchtpu {
  func.func public @main() -> (tensor<` + n + `xf32>) {
    %0 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<` + n + `xf32>
  }
}`
	}
	e.explainCompile(site, mod("3"))
	r, d := e.explainCompile(site, mod("5"))
	require.Equal(t, "shapes", r)
	require.Equal(t, "result 0 is tensor<5xf32>, was tensor<3xf32>", d)
}
