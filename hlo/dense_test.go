package hlo

import (
	"strings"
	"testing"
)

func TestDenseF64Golden(t *testing.T) {
	b := NewBuilder()
	c := b.DenseF64([]float64{1, -0.5, 2.5e-300, 3}, 2, 2)
	text, _ := b.Module([]*Value{c})
	want := `"stablehlo.constant"() {value = dense<[[1.0e+00, -5.0e-01], [2.5e-300, 3.0e+00]]> : tensor<2x2xf64>}`
	if !strings.Contains(text, want) {
		t.Fatalf("module text lacks %q:\n%s", want, text)
	}
}
