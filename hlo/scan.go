package hlo

import "slices"

// ReduceWindowN reduces the windows of several operands together (all of
// one shape) with a custom combining body, which sees the accumulators
// followed by the new elements (a0..an-1, b0..bn-1) as scalars and returns
// one scalar per operand. inits holds one scalar per operand; padding takes
// those values.
func (b *Builder) ReduceWindowN(xs, inits []*Value, w Window, body func(rb *Builder, args []*Value) []*Value) []*Value {
	if !(len(xs) > 0 && len(xs) == len(inits)) {
		failf("reduce_window: %d operands and %d inits", len(xs), len(inits))
	}
	attrs, shape := w.resolve(xs[0].T)
	var argTypes, accTypes, outTypes []Type
	for i, x := range xs {
		if !slices.Equal(x.T.Shape, xs[0].T.Shape) {
			failf("reduce_window: operand shapes differ: %v vs %v", x.T, xs[0].T)
		}
		if !inits[i].T.Equal(T(x.T.Elem)) {
			failf("reduce_window: init %v for %v", inits[i].T, x.T)
		}
		accTypes = append(accTypes, T(x.T.Elem))
		outTypes = append(outTypes, T(x.T.Elem, shape...))
	}
	argTypes = append(append(argTypes, accTypes...), accTypes...)
	region := b.region(argTypes, body)
	operands := append(append([]*Value{}, xs...), inits...)
	return b.opN("stablehlo.reduce_window", outTypes, attrs, region, operands...)
}

// Scan computes the inclusive prefix reduction of xs along dim with the
// body of ReduceWindowN: each output position combines every element at or
// before it. It is a reduce_window whose window spans the whole dimension,
// padded in front with the inits.
func (b *Builder) Scan(xs, inits []*Value, dim int64, body func(rb *Builder, args []*Value) []*Value) []*Value {
	r := xs[0].T.Rank()
	if !(dim >= 0 && int(dim) < r) {
		failf("scan: bad dimension %d for %v", dim, xs[0].T)
	}
	n := xs[0].T.Shape[dim]
	dims := make([]int64, r)
	pad := make([][2]int64, r)
	for i := range dims {
		dims[i] = 1
	}
	if n == 0 {
		return xs
	}
	dims[dim] = n
	pad[dim] = [2]int64{n - 1, 0}
	return b.ReduceWindowN(xs, inits, Window{Dims: dims, Padding: pad}, body)
}
