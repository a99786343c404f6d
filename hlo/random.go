package hlo

import (
	"slices"
	"strconv"
)

// RngBitGenerator runs StableHLO's counter-based generator (THREE_FRY) from
// state, a tensor<2xui64> (key, counter), and returns the next state and
// random bits of type out (an unsigned integer type).
func (b *Builder) RngBitGenerator(state *Value, out Type) (*Value, *Value) {
	if !state.T.Equal(T(U64, 2)) {
		failf("rng_bit_generator: state %v is not tensor<2xui64>", state.T)
	}
	if !out.Elem.IsUnsigned() {
		failf("rng_bit_generator: output %v is not unsigned", out)
	}
	rs := b.opN("stablehlo.rng_bit_generator", []Type{state.T, out},
		"{rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>}", "", state)
	return rs[0], rs[1]
}

// Sort sorts xs (all of one shape) together along dim, ordered by the
// comparator less, which sees the pair of elements (a, b) of every operand
// (a0, b0, a1, b1, ...) and returns a boolean scalar. The sort is stable.
func (b *Builder) Sort(dim int64, less func(rb *Builder, args []*Value) *Value, xs ...*Value) []*Value {
	if len(xs) <= 0 {
		failf("sort: no operands")
	}
	var argTypes, outTypes []Type
	for _, x := range xs {
		if !slices.Equal(x.T.Shape, xs[0].T.Shape) {
			failf("sort: operand shapes differ: %v vs %v", x.T, xs[0].T)
		}
		argTypes = append(argTypes, T(x.T.Elem), T(x.T.Elem))
		outTypes = append(outTypes, x.T)
	}
	if !(dim >= 0 && int(dim) < xs[0].T.Rank()) {
		failf("sort: bad dimension %d for %v", dim, xs[0].T)
	}
	body := b.region(argTypes, func(rb *Builder, a []*Value) []*Value { return []*Value{less(rb, a)} })
	return b.opN("stablehlo.sort", outTypes, "{dimension = "+strconv.FormatInt(dim, 10)+" : i64, is_stable = true}", body, xs...)
}
