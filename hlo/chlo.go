package hlo

// Chlo records the elementwise CHLO op chlo.<name> (lgamma, digamma,
// erf_inv, erfc, bessel_i1e, sinh, cosh, asin, acos, atan, asinh, acosh,
// atanh...) on operands of one type; the result has that type.
func (b *Builder) Chlo(name string, xs ...*Value) *Value {
	for _, x := range xs[1:] {
		if !x.T.Equal(xs[0].T) {
			failf("chlo.%s: operand types differ: %v vs %v", name, xs[0].T, x.T)
		}
	}
	return b.op("chlo."+name, xs[0].T, "", xs...)
}
