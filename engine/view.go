package engine

import (
	"cmp"
	"slices"

	"torchtpu/hlo"
)

// A view is how a tensor sees its storage: an element offset, sizes and
// strides over the storage's flattened base value.
type view struct {
	offset  int64
	sizes   []int64
	strides []int64
}

func contiguousStrides(sizes []int64) []int64 {
	st := make([]int64, len(sizes))
	acc := int64(1)
	for i := len(sizes) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= max(sizes[i], 1)
	}
	return st
}

func numel(sizes []int64) int64 {
	n := int64(1)
	for _, s := range sizes {
		n *= s
	}
	return n
}

// isContiguous reports whether the view is a row-major walk of its sizes
// (strides of size-1 dimensions do not matter).
func (v view) isContiguous() bool {
	want := contiguousStrides(v.sizes)
	for i, s := range v.sizes {
		if s != 1 && v.strides[i] != want[i] {
			return false
		}
	}
	return true
}

// coversBase reports whether the view reads every element of base in row-major order.
func (v view) coversBase(base []int64) bool {
	return v.offset == 0 && numel(v.sizes) == numel(base) && v.isContiguous()
}

// slicePlan maps a view onto a strided slice of the base followed by a
// transpose and a broadcast. dims[i] is the base dimension view dimension i
// walks (-1 for a broadcast or size-1 dimension), steps[i] its step.
type slicePlan struct {
	start, limit, step []int64 // per base dimension
	dims               []int   // per view dimension
}

// planSlice finds a slicePlan for v over base, if one exists.
func planSlice(base []int64, v view) (slicePlan, bool) {
	cs := contiguousStrides(base)
	k := len(base)
	p := slicePlan{start: make([]int64, k), limit: make([]int64, k), step: make([]int64, k), dims: make([]int, len(v.sizes))}
	if numel(v.sizes) == 0 || numel(base) == 0 {
		return p, false
	}
	rem := v.offset
	for j := 0; j < k; j++ {
		p.start[j] = rem / cs[j]
		rem -= p.start[j] * cs[j]
		if p.start[j] >= base[j] {
			return p, false
		}
		p.limit[j] = p.start[j] + 1
		p.step[j] = 1
	}
	used := make([]bool, k)
	for i, n := range v.sizes {
		p.dims[i] = -1
		s := v.strides[i]
		if n == 1 || s == 0 {
			continue
		}
		if s < 0 {
			return p, false
		}
		j := -1
		for jj := 0; jj < k; jj++ {
			if base[jj] > 1 && cs[jj] <= s && s%cs[jj] == 0 {
				j = jj
				break
			}
		}
		if j < 0 || used[j] {
			return p, false
		}
		step := s / cs[j]
		last := p.start[j] + step*(n-1)
		if last >= base[j] {
			return p, false
		}
		used[j] = true
		p.dims[i] = j
		p.step[j] = step
		p.limit[j] = last + 1
	}
	return p, true
}

// flatIndex returns the int64 storage index of every view element:
// offset + sum_i iota_i * stride_i.
func flatIndex(b *hlo.Builder, v view) *hlo.Value { return flatIndexAt(b, v, nil) }

// flatIndexAt is flatIndex; when starts is not nil, the offset is a runtime
// value, so views that differ only in their offset share one program.
func flatIndexAt(b *hlo.Builder, v view, starts windowStarts) *hlo.Value {
	t := hlo.T(hlo.S64, v.sizes...)
	idx := b.ConstantInt(t, v.offset)
	if starts != nil {
		idx = b.BroadcastInDim(starts([]int64{v.offset})[0], v.sizes, nil)
	}
	for i, s := range v.strides {
		if v.sizes[i] == 1 || s == 0 {
			continue
		}
		term := b.Iota(t, i)
		if s != 1 {
			term = b.Mul(term, b.ConstantInt(t, s))
		}
		idx = b.Add(idx, term)
	}
	return idx
}

// readView returns the view v of base (a value in the base shape).
func readView(b *hlo.Builder, base *hlo.Value, v view) *hlo.Value {
	return readViewWith(b, base, v, nil)
}

// windowStarts gives the start of each base dimension of a unit-step slice
// as a runtime value; see Engine.Read.
type windowStarts func(starts []int64) []*hlo.Value

// readViewWith is readView; when starts is not nil, a unit-step slice of the
// base is read with stablehlo.dynamic_slice at the runtime starts it gives,
// so views that differ only in where they start share one program.
func readViewWith(b *hlo.Builder, base *hlo.Value, v view, starts windowStarts) *hlo.Value {
	shape := base.T.Shape
	switch {
	case v.offset == 0 && slices.Equal(v.sizes, shape) && v.isContiguous():
		return base
	case v.coversBase(shape):
		return b.Reshape(base, v.sizes...)
	}
	if numel(v.sizes) == 0 {
		return b.Constant(hlo.T(base.T.Elem, v.sizes...), 0)
	}
	p, ok := planSlice(shape, v)
	if !ok {
		if fine, refined := refineShape(numel(shape), v); refined {
			if p, ok = planSlice(fine, v); ok {
				base, shape = b.Reshape(base, fine...), fine
			}
		}
	}
	if ok {
		var x *hlo.Value
		if starts != nil {
			sizes := make([]int64, len(p.start))
			for j := range sizes {
				sizes[j] = p.limit[j] - p.start[j]
			}
			x = b.DynamicSlice(base, starts(p.start), sizes)
			if !unitSteps(p) {
				x = b.Slice(x, make([]int64, len(sizes)), sizes, p.step)
			}
		} else {
			x = b.Slice(base, p.start, p.limit, p.step)
		}
		return placeSlice(b, x, p, v)
	}
	flat := b.Reshape(base, numel(shape))
	return b.GatherFlat(flat, flatIndexAt(b, v, starts))
}

// placeSlice turns x, the block of the base that plan p of view v slices,
// into the view: it keeps the walked base dimensions, in base order, then
// permutes them to view order and broadcasts to the view's sizes.
func placeSlice(b *hlo.Builder, x *hlo.Value, p slicePlan, v view) *hlo.Value {
	var keep []int64
	for j := range x.T.Shape {
		for _, d := range p.dims {
			if d == j {
				keep = append(keep, x.T.Shape[j])
			}
		}
	}
	x = b.Reshape(x, keep...)
	order := viewOrder(p.dims)
	x = b.Transpose(x, order...)
	var mapping []int64
	for i, d := range p.dims {
		if d >= 0 {
			mapping = append(mapping, int64(i))
		}
	}
	return b.BroadcastInDim(x, v.sizes, mapping)
}

// viewOrder returns, for the walked view dimensions in view order, their
// rank among the walked base dimensions: the transpose from base order to view order.
func viewOrder(dims []int) []int64 {
	var walked []int
	for _, d := range dims {
		if d >= 0 {
			walked = append(walked, d)
		}
	}
	perm := make([]int64, len(walked))
	for i, d := range walked {
		rank := 0
		for _, e := range walked {
			if e < d {
				rank++
			}
		}
		perm[i] = int64(rank)
	}
	return perm
}

// writeView returns base with the view v replaced by val (val has v's sizes).
func writeView(b *hlo.Builder, base *hlo.Value, v view, val *hlo.Value) *hlo.Value {
	return writeViewWith(b, base, v, val, nil)
}

// writeViewWith is writeView; when starts is not nil, a unit-step slice is
// updated at the runtime starts it gives, so writes that differ only in
// where they land (x[i] = y in a loop) share one program.
func writeViewWith(b *hlo.Builder, base *hlo.Value, v view, val *hlo.Value, starts windowStarts) *hlo.Value {
	shape := base.T.Shape
	switch {
	case v.offset == 0 && slices.Equal(v.sizes, shape) && v.isContiguous():
		return val
	case v.coversBase(shape):
		return b.Reshape(val, shape...)
	}
	if numel(v.sizes) == 0 {
		return base
	}
	p, ok := planSlice(shape, v)
	orig := shape
	if !ok || !unitSteps(p) {
		if fine, refined := refineShape(numel(shape), v); refined {
			if q, ok2 := planSlice(fine, v); ok2 && unitSteps(q) {
				p, ok, base, shape = q, true, b.Reshape(base, fine...), fine
			}
		}
	}
	if ok && unitSteps(p) && noBroadcast(v, p) {
		// Permute val's walked dimensions into base order, add the unwalked
		// ones as size 1, and update the block in place.
		var walkedSizes []int64
		for i, d := range p.dims {
			if d >= 0 {
				walkedSizes = append(walkedSizes, v.sizes[i])
			}
		}
		x := b.Reshape(val, walkedSizes...)
		perm := viewOrder(p.dims)
		inv := make([]int64, len(perm))
		for i, r := range perm {
			inv[r] = int64(i)
		}
		x = b.Transpose(x, inv...)
		block := make([]int64, len(shape))
		for j := range shape {
			block[j] = p.limit[j] - p.start[j]
		}
		x = b.Reshape(x, block...)
		var at []*hlo.Value
		if starts != nil {
			at = starts(p.start)
		} else {
			for j := range shape {
				at = append(at, b.ConstantInt(hlo.T(hlo.S64), p.start[j]))
			}
		}
		return b.Reshape(b.DynamicUpdateSlice(base, x, at), orig...)
	}
	flat := b.Reshape(base, numel(shape))
	idx := flatIndexAt(b, v, starts)
	if mayOverlap(v) {
		// A view that holds a base element more than once (unfold, as_strided)
		// writes only the elements the op changed: a copy left as it was must
		// not undo a write made through another copy (index_put_ on an unfold).
		old := b.Reshape(readView(b, flat, v), v.sizes...)
		skip := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), numel(shape)), idx.T.Shape)
		idx = b.Select(bitsDiffer(b, val, old), idx, skip) // scatter drops out-of-range updates
	}
	out := b.ScatterFlat(flat, idx, val, nil)
	return b.Reshape(out, orig...)
}

// mayOverlap reports whether two elements of v can share a storage element:
// a broadcast dimension, or a stride not past the span of the smaller ones.
func mayOverlap(v view) bool {
	type dim struct{ size, stride int64 }
	var ds []dim
	for i, n := range v.sizes {
		if n > 1 {
			ds = append(ds, dim{n, v.strides[i]})
		}
	}
	slices.SortFunc(ds, func(a, b dim) int { return cmp.Compare(a.stride, b.stride) })
	span := int64(0)
	for _, d := range ds {
		if d.stride <= span {
			return true
		}
		span += (d.size - 1) * d.stride
	}
	return false
}

// bitsDiffer compares x and y by their bits (NaNs with the same payload are
// equal, -0 and 0 differ).
func bitsDiffer(b *hlo.Builder, x, y *hlo.Value) *hlo.Value {
	e := x.T.Elem
	switch {
	case e.IsComplex():
		return b.Or(bitsDiffer(b, b.Real(x), b.Real(y)), bitsDiffer(b, b.Imag(x), b.Imag(y)))
	case e.IsFloat():
		ie := map[int]hlo.Elem{8: hlo.S8, 16: hlo.S16, 32: hlo.S32, 64: hlo.S64}[e.Bits()]
		return b.Compare(hlo.NE, b.BitcastConvert(x, ie), b.BitcastConvert(y, ie))
	}
	return b.Compare(hlo.NE, x, y)
}

// refineShape returns a shape of n elements whose contiguous strides include
// every stride the view walks: [n/s1, s1/s2, ..., s_m] for its distinct
// strides s1 > s2 > ... > s_m. A view that walks a base in an order its own
// shape does not show (the transpose of a flattened matrix, heads split out of
// a feature dimension) then becomes a slice and a transpose of the reshaped
// base instead of a gather. ok is false when the strides do not nest.
func refineShape(n int64, v view) ([]int64, bool) {
	var strides []int64
	for i, sz := range v.sizes {
		if sz > 1 && v.strides[i] > 0 && !slices.Contains(strides, v.strides[i]) {
			strides = append(strides, v.strides[i])
		}
	}
	if len(strides) == 0 {
		return nil, false
	}
	slices.SortFunc(strides, func(a, b int64) int { return cmp.Compare(b, a) })
	if n%strides[0] != 0 {
		return nil, false
	}
	fine := []int64{n / strides[0]}
	for k := 1; k < len(strides); k++ {
		if strides[k-1]%strides[k] != 0 {
			return nil, false
		}
		fine = append(fine, strides[k-1]/strides[k])
	}
	return append(fine, strides[len(strides)-1]), true
}

func unitSteps(p slicePlan) bool {
	for _, s := range p.step {
		if s != 1 {
			return false
		}
	}
	return true
}

func noBroadcast(v view, p slicePlan) bool {
	for i, n := range v.sizes {
		if n != 1 && p.dims[i] < 0 {
			return false
		}
	}
	return true
}
