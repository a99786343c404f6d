package hlo

import (
	"fmt"
	"strconv"
)

// Reshape returns x with the given dimensions (same element count).
func (b *Builder) Reshape(x *Value, dims ...int64) *Value {
	t := T(x.T.Elem, dims...)
	if t.NumElements() != x.T.NumElements() {
		failf("reshape: %v to %v changes the element count", x.T, dims)
	}
	if t.Equal(x.T) {
		return x
	}
	return b.op("stablehlo.reshape", t, "", x)
}

// BroadcastInDim broadcasts x to dims; x's dimension i becomes dimension mapping[i].
func (b *Builder) BroadcastInDim(x *Value, dims []int64, mapping []int64) *Value {
	if len(mapping) != x.T.Rank() {
		failf("broadcast_in_dim: mapping %v for %v", mapping, x.T)
	}
	for i, m := range mapping {
		if !(m >= 0 && int(m) < len(dims) && (x.T.Shape[i] == 1 || x.T.Shape[i] == dims[m])) {
			failf("broadcast_in_dim: %v to %v with %v", x.T, dims, mapping)
		}
	}
	t := T(x.T.Elem, dims...)
	if t.Equal(x.T) {
		identity := true
		for i, m := range mapping {
			identity = identity && int(m) == i
		}
		if identity {
			return x
		}
	}
	if p := predicateOf(x); p != nil {
		// Broadcast the predicate, then convert, so that Mul sees the conversion.
		return b.Convert(b.BroadcastInDim(p, dims, mapping), x.T.Elem)
	}
	return b.op("stablehlo.broadcast_in_dim", t, "{broadcast_dimensions = "+i64Array(mapping)+"}", x)
}

// BroadcastTo broadcasts x to dims with NumPy's trailing alignment.
func (b *Builder) BroadcastTo(x *Value, dims []int64) *Value {
	off := len(dims) - x.T.Rank()
	if off < 0 {
		failf("broadcast: %v to %v", x.T, dims)
	}
	mapping := make([]int64, x.T.Rank())
	for i := range mapping {
		mapping[i] = int64(off + i)
	}
	return b.BroadcastInDim(x, dims, mapping)
}

// Transpose permutes x's dimensions: result dimension i is x's dimension perm[i].
func (b *Builder) Transpose(x *Value, perm ...int64) *Value {
	if len(perm) != x.T.Rank() {
		failf("transpose: perm %v for %v", perm, x.T)
	}
	dims := make([]int64, len(perm))
	identity := true
	for i, p := range perm {
		dims[i] = x.T.Shape[p]
		identity = identity && int(p) == i
	}
	if identity {
		return x
	}
	return b.op("stablehlo.transpose", T(x.T.Elem, dims...), "{permutation = "+i64Array(perm)+"}", x)
}

// Slice takes elements start[i] <= k < limit[i] stepping by strides[i] in each dimension.
func (b *Builder) Slice(x *Value, start, limit, strides []int64) *Value {
	r := x.T.Rank()
	if !(len(start) == r && len(limit) == r && len(strides) == r) {
		failf("slice: rank mismatch for %v", x.T)
	}
	dims := make([]int64, r)
	identity := true
	for i := range dims {
		if !(start[i] >= 0 && limit[i] <= x.T.Shape[i] && start[i] <= limit[i] && strides[i] >= 1) {
			failf("slice: [%d:%d:%d] out of %v", start[i], limit[i], strides[i], x.T)
		}
		dims[i] = (limit[i] - start[i] + strides[i] - 1) / strides[i]
		identity = identity && start[i] == 0 && limit[i] == x.T.Shape[i] && strides[i] == 1
	}
	if identity {
		return x
	}
	attrs := "{limit_indices = " + i64Array(limit) + ", start_indices = " + i64Array(start) + ", strides = " + i64Array(strides) + "}"
	return b.op("stablehlo.slice", T(x.T.Elem, dims...), attrs, x)
}

// Concatenate joins xs along dim.
func (b *Builder) Concatenate(dim int, xs ...*Value) *Value {
	if len(xs) <= 0 {
		failf("concatenate: no operands")
	}
	if len(xs) == 1 {
		return xs[0]
	}
	dims := append([]int64{}, xs[0].T.Shape...)
	dims[dim] = 0
	for _, x := range xs {
		if !(x.T.Rank() == len(dims) && x.T.Elem == xs[0].T.Elem) {
			failf("concatenate: %v vs %v", x.T, xs[0].T)
		}
		dims[dim] += x.T.Shape[dim]
	}
	return b.op("stablehlo.concatenate", T(xs[0].T.Elem, dims...), "{dimension = "+strconv.Itoa(dim)+" : i64}", xs...)
}

// Iota returns a tensor of type t whose values count up along dim.
func (b *Builder) Iota(t Type, dim int) *Value {
	return b.op("stablehlo.iota", t, "{iota_dimension = "+strconv.Itoa(dim)+" : i64}")
}

// DynamicSlice takes a block of sizes starting at the rank-0 integer starts.
func (b *Builder) DynamicSlice(x *Value, starts []*Value, sizes []int64) *Value {
	if !(len(starts) == x.T.Rank() && len(sizes) == x.T.Rank()) {
		failf("dynamic_slice: rank mismatch for %v", x.T)
	}
	ops := append([]*Value{x}, starts...)
	return b.op("stablehlo.dynamic_slice", T(x.T.Elem, sizes...), "{slice_sizes = "+i64Array(sizes)+"}", ops...)
}

// DynamicUpdateSlice writes update into x at the rank-0 integer starts.
func (b *Builder) DynamicUpdateSlice(x, update *Value, starts []*Value) *Value {
	if !(len(starts) == x.T.Rank() && update.T.Rank() == x.T.Rank() && update.T.Elem == x.T.Elem) {
		failf("dynamic_update_slice: %v into %v", update.T, x.T)
	}
	ops := append([]*Value{x, update}, starts...)
	return b.op("stablehlo.dynamic_update_slice", x.T, "", ops...)
}

// Pad pads x with the scalar value: lo and hi may be negative, interior >= 0.
func (b *Builder) Pad(x, value *Value, lo, hi, interior []int64) *Value {
	dims := make([]int64, x.T.Rank())
	for i := range dims {
		n := x.T.Shape[i]
		in := int64(0)
		if n > 0 {
			in = (n - 1) * interior[i]
		}
		dims[i] = lo[i] + n + in + hi[i]
	}
	attrs := fmt.Sprintf("{edge_padding_high = %s, edge_padding_low = %s, interior_padding = %s}", i64Array(hi), i64Array(lo), i64Array(interior))
	return b.op("stablehlo.pad", T(x.T.Elem, dims...), attrs, x, value)
}

// Reverse reverses x along dims.
func (b *Builder) Reverse(x *Value, dims ...int64) *Value {
	if len(dims) == 0 {
		return x
	}
	return b.op("stablehlo.reverse", x.T, "{dimensions = "+i64Array(dims)+"}", x)
}
