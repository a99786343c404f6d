package hlo

import (
	"strings"
	"testing"
)

func TestComplexGolden(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F32, 2, 4))
	c := b.Complex(x, x)
	f := b.FFT(c, FFTForward, []int64{4})
	r := b.FFT(x, FFTReal, []int64{4})
	ir := b.FFT(r, FFTInvReal, []int64{4})
	k := b.Mul(f, b.BroadcastTo(b.ConstantComplex(T(C64), 1, -2), []int64{2, 4}))
	text, _ := b.Module([]*Value{b.Real(k), b.Imag(k), b.Abs(k), ir})
	for _, want := range []string{
		`"stablehlo.complex"(%arg0, %arg0) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xcomplex<f32>>`,
		`"stablehlo.fft"(%0) {fft_length = array<i64: 4>, fft_type = #stablehlo<fft_type FFT>} : (tensor<2x4xcomplex<f32>>) -> tensor<2x4xcomplex<f32>>`,
		`{fft_length = array<i64: 4>, fft_type = #stablehlo<fft_type RFFT>} : (tensor<2x4xf32>) -> tensor<2x3xcomplex<f32>>`,
		`{fft_length = array<i64: 4>, fft_type = #stablehlo<fft_type IRFFT>} : (tensor<2x3xcomplex<f32>>) -> tensor<2x4xf32>`,
		`dense<(0x3F800000,0xC0000000)> : tensor<complex<f32>>`,
		`"stablehlo.real"`, `"stablehlo.imag"`,
		`"stablehlo.abs"(%6) : (tensor<2x4xcomplex<f32>>) -> tensor<2x4xf32>`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("module text lacks %s:\n%s", want, text)
		}
	}
	if C128.Bits() != 128 || C64.Bits() != 64 || C64.Real() != F32 || ComplexOf(F16) != C64 {
		t.Fatal("complex element type properties")
	}
}
