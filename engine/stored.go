package engine

import (
	"slices"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// How a dtype is stored and how it is computed. Every dtype but complex32 and
// float8 is stored in the element type its rules compute it in. A float8
// storage holds its XLA float8 type (CPU's bytes), computed as float32:
// load widens it exactly, store rounds with CPU's rounding (hlo.Float8Bits);
// a float8_e5m2 NaN's payload survives both (hlo.Float8Load). complex32 has no XLA
// element type: a complex32 storage holds float16 (real, imaginary) pairs
// along one extra trailing dimension of 2, the bytes CPU PyTorch holds, so
// host copies are byte copies and float16 views of it (view_as_real,
// .view(torch.float16)) see CPU's bytes; its rules compute it as complex64
// (dispatch.ComplexHalf), as CPU's kernels compute it in complex<float>.
// Reading a storage widens the pairs to complex64 right at the parameter
// (load); writing one rounds each part to float16 right before the value is
// stored (store). Every storage value of the graph (pending values,
// parameters bound to buffers, program outputs) is in the stored form.

// storedType returns the type of a storage value holding elements of dtype d
// in shape.
func storedType(d dispatch.DType, shape []int64) hlo.Type {
	if d == dispatch.ComplexHalf {
		return hlo.T(hlo.F16, append(slices.Clone(shape), 2)...)
	}
	return hlo.T(d.StoredElem(), shape...)
}

// load turns the stored value v of dtype d into the value rules compute with.
func load(b *hlo.Builder, v *hlo.Value, d dispatch.DType) *hlo.Value {
	if d.IsFloat8() {
		return b.Float8Load(v)
	}
	if d != dispatch.ComplexHalf {
		return v
	}
	k := v.T.Rank() - 1
	part := func(i int64) *hlo.Value {
		start, limit, step := make([]int64, k+1), slices.Clone(v.T.Shape), make([]int64, k+1)
		for j := range step {
			step[j] = 1
		}
		start[k], limit[k] = i, i+1
		return b.Convert(b.Reshape(b.Slice(v, start, limit, step), v.T.Shape[:k]...), hlo.F32)
	}
	return b.Complex(part(0), part(1))
}

// store turns the computed value v into the stored value of dtype d: a
// complex32 value's parts are rounded to float16 and paired; a value computed
// in a wider type than d's (float32 for the float16 result of a complex32
// op) is rounded to it.
func store(b *hlo.Builder, v *hlo.Value, d dispatch.DType) *hlo.Value {
	if d.IsFloat8() {
		if v.T.Elem != hlo.F32 { // float64 rounds to float32 first, as CPU's conversion does
			v = b.Convert(v, hlo.F32)
		}
		return b.Float8Store(v, d.StoredElem())
	}
	if d != dispatch.ComplexHalf {
		if v.T.Elem != d.Elem() {
			return b.Convert(v, d.Elem())
		}
		return v
	}
	if !v.T.Elem.IsComplex() {
		v = b.Convert(v, hlo.C64)
	}
	shape := append(slices.Clone(v.T.Shape), 1)
	re := b.Reshape(b.Convert(b.Real(v), hlo.F16), shape...)
	im := b.Reshape(b.Convert(b.Imag(v), hlo.F16), shape...)
	return b.Concatenate(len(shape)-1, re, im)
}

// rounded returns the computed value v rounded to dtype d, in d's computed
// form: what reading it back would give once stored.
func rounded(b *hlo.Builder, v *hlo.Value, d dispatch.DType) *hlo.Value {
	return load(b, store(b, v, d), d)
}
