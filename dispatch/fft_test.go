package dispatch

import "testing"

func TestFFTAndComplexRules(t *testing.T) {
	runCases(t, []ruleCase{
		{"aten::_fft_r2c", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 4, 6, 5), intsArg(1, 2), intArg(0), boolArg(true)}
		}, "4x6x3xcomplex<f32>"},
		{"aten::_fft_r2c", func(h *harness) []Arg {
			return []Arg{h.tensor(Float64, 4, 6, 5), intsArg(-1, 0), intArg(2), boolArg(true)}
		}, "3x6x5xcomplex<f64>"},
		{"aten::_fft_r2c", func(h *harness) []Arg {
			return []Arg{h.tensor(Float32, 2, 2, 3, 4), intsArg(0, 1, 2, 3), intArg(1), boolArg(false)}
		}, "2x2x3x4xcomplex<f32>"},
		{"aten::_fft_r2c", func(h *harness) []Arg { return []Arg{h.tensor(Float16, 4), intsArg(0), intArg(0), boolArg(true)} },
			"error: Unsupported dtype Half"},
		{"aten::_fft_c2c", func(h *harness) []Arg {
			return []Arg{h.tensor(Complex64, 2, 3, 4, 5), intsArg(3, 0, 1, 2), intArg(2), boolArg(false)}
		}, "2x3x4x5xcomplex<f32>"},
		{"aten::_fft_c2c", func(h *harness) []Arg {
			return []Arg{h.tensor(Complex64, 4), intsArg(0, 0), intArg(0), boolArg(true)}
		}, "error: FFT dims must be unique"},
		{"aten::_fft_c2r", func(h *harness) []Arg {
			return []Arg{h.tensor(Complex128, 4, 3), intsArg(0, 1), intArg(0), intArg(5)}
		}, "4x5xf64"},
		{"aten::_fft_c2r", func(h *harness) []Arg {
			return []Arg{h.tensor(Complex64, 4, 6), intsArg(1), intArg(1), intArg(4)}
		}, "4x4xf32"},
		{"aten::_fft_c2r", func(h *harness) []Arg {
			return []Arg{h.tensor(Complex64, 4, 2), intsArg(1), intArg(1), intArg(8)}
		}, "4x8xf32"},
		{"aten::complex", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 2, 3), h.tensor(Float32, 3)} },
			"2x3xcomplex<f32>"},
		{"aten::complex", func(h *harness) []Arg { return []Arg{h.tensor(Float32, 3), h.tensor(Float64, 3)} },
			"error: Expected object of scalar type Float but got scalar type Double"},
		{"aten::polar", func(h *harness) []Arg { return []Arg{h.tensor(Float16, 3), h.tensor(Float16, 3)} },
			"3xcomplex<f32>"},
		{"aten::polar", func(h *harness) []Arg { return []Arg{h.tensor(Float64, 3), h.tensor(Float64, 3)} },
			"3xcomplex<f64>"},
		{"aten::angle", func(h *harness) []Arg { return []Arg{h.tensor(Complex64, 3)} }, "3xf32"},
		{"aten::abs", func(h *harness) []Arg { return []Arg{h.tensor(Complex128, 3)} }, "3xf64"},
		{"aten::mean", func(h *harness) []Arg { return []Arg{h.tensor(Complex64, 3)} }, "complex<f32>"},
		{"aten::exp", func(h *harness) []Arg { return []Arg{h.tensor(Complex64, 3)} }, "3xcomplex<f32>"},
		{"aten::erf", func(h *harness) []Arg { return []Arg{h.tensor(Complex64, 3)} },
			"error: \"erf\" not implemented for 'ComplexFloat'"},
		{"aten::div.Tensor", func(h *harness) []Arg { return []Arg{h.tensor(Complex64, 3), h.tensor(Float64, 3)} },
			"3xcomplex<f64>"},
	})
}
