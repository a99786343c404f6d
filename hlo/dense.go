package hlo

import (
	"strconv"
	"strings"
)

// DenseF64 returns a float64 tensor of the given shape holding vals in
// row-major order (a table of coefficients, for instance).
func (b *Builder) DenseF64(vals []float64, shape ...int64) *Value {
	t := T(F64, shape...)
	if int64(len(vals)) != t.NumElements() {
		failf("dense: %d values for %v", len(vals), t)
	}
	var sb strings.Builder
	var rec func(dim int, off int64)
	rec = func(dim int, off int64) {
		if dim == len(shape) {
			sb.WriteString(denseFloat(vals[off]))
			return
		}
		stride := int64(1)
		for _, s := range shape[dim+1:] {
			stride *= s
		}
		sb.WriteByte('[')
		for i := int64(0); i < shape[dim]; i++ {
			if i > 0 {
				sb.WriteString(", ")
			}
			rec(dim+1, off+i*stride)
		}
		sb.WriteByte(']')
	}
	rec(0, 0)
	return b.op("stablehlo.constant", t, "{value = dense<"+sb.String()+"> : "+t.String()+"}")
}

// denseFloat prints v as an MLIR float literal: the mantissa always has a
// decimal point ("1.0e+00", not "1e+00", which would read as an integer).
func denseFloat(v float64) string {
	s := strconv.FormatFloat(v, 'e', -1, 64)
	if i := strings.IndexByte(s, 'e'); i >= 0 && !strings.Contains(s[:i], ".") {
		s = s[:i] + ".0" + s[i:]
	}
	return s
}
