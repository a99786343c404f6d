package engine

import (
	"slices"
	"sort"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// PyTorch's messages for out= arguments whose memory overlaps (ATen's MemoryOverlap.cpp).
const (
	msgInternalOverlap = "unsupported operation: more than one element of the written-to tensor refers to a single " +
		"memory location. Please clone() the tensor before performing the operation."
	msgInputOverlap = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a " +
		"single memory location. Please clone() the tensor before performing the operation."
)

// checkOutsApart raises the rule's OutsApart error when two out= arguments
// share memory.
func checkOutsApart(rule *dispatch.Rule, dsts []dispatch.Arg) error {
	if rule.OutsApart == "" {
		return nil
	}
	for i := range dsts {
		for j := i + 1; j < len(dsts); j++ {
			a, b := dsts[i].Handles[0].(*TensorDesc), dsts[j].Handles[0].(*TensorDesc)
			if s := overlapOf(a, b); s == overlapFull || s == overlapPartial {
				return dispatch.ValueErrorf("%s", rule.OutsApart)
			}
		}
	}
	return nil
}

// The in-place kernels CPU lets write an expanded self (internal overlap:
// they fill or mask, some with a deprecation warning), and those that let
// self partly share memory with an input (they read their inputs first, or
// read only a 0-dim value).
var (
	selfOverlapOK = map[string]bool{
		"aten::fill.Scalar": true, "aten::fill.Tensor": true, "aten::zero": true, "aten::threshold": true,
		"aten::tril": true, "aten::triu": true, "aten::index_fill.int_Scalar": true, "aten::index_fill.int_Tensor": true,
		"aten::index_put": true, "aten::_index_put_impl_": true, "aten::masked_fill.Scalar": true,
		"aten::masked_fill.Tensor": true, "aten::baddbmm": true, "aten::addmv": true, "aten::conj_physical": true,
		"aten::_amp_update_scale_": true,
	}
	// The index and scatter kernels refuse any overlap of self with the listed
	// arguments (nil: every tensor argument), the same tensor included.
	noOverlapAtAll = map[string][]int{
		"aten::index_add": nil, "aten::index_copy": nil, "aten::index_fill.int_Scalar": nil,
		"aten::index_fill.int_Tensor": {2}, "aten::index_put": nil, "aten::_index_put_impl_": nil, "aten::put": nil,
		"aten::scatter.src": nil, "aten::scatter.value": nil, "aten::scatter.reduce": nil,
		"aten::scatter.value_reduce": nil, "aten::scatter_add": nil, "aten::scatter_reduce.two": nil,
		"aten::index_reduce": nil,
	}
	inputOverlapOK = map[string]bool{
		"aten::fill.Tensor": true, "aten::masked_fill.Tensor": true, "aten::index_fill.int_Tensor": true,
		"aten::masked_scatter": true, "aten::addmm": true, "aten::addmv": true, "aten::addbmm": true,
		"aten::baddbmm": true, "aten::embedding_renorm": true, "aten::_amp_update_scale_": true,
	}
)

// checkSelfOverlap applies the memory checks CPU's in-place kernels make
// before writing self: no two elements of self at one address (an expanded
// tensor), and no input that shares only part of self's memory (the same
// tensor is fine). Lists (the _foreach_ ops) are not checked.
func checkSelfOverlap(rule *dispatch.Rule, args []dispatch.Arg) error {
	if len(args) == 0 || args[0].Kind != dispatch.ArgTensor || len(args[0].Handles) != 1 {
		return nil
	}
	self, ok := args[0].Handles[0].(*TensorDesc)
	if !ok || self == nil {
		return nil
	}
	if !selfOverlapOK[rule.Name] && internalOverlap(self) {
		return dispatch.Errorf("%s", msgInternalOverlap)
	}
	if only, listed := noOverlapAtAll[rule.Name]; listed {
		for i, a := range args[1:] {
			if only != nil && !slices.Contains(only, i+1) {
				continue
			}
			for _, h := range a.Handles {
				if src, ok := h.(*TensorDesc); ok && src != nil && src.Addr == self.Addr {
					if s := overlapOf(self, src); s == overlapFull || s == overlapPartial {
						return dispatch.Errorf("%s", msgInputOverlap)
					}
				}
			}
		}
	}
	if inputOverlapOK[rule.Name] {
		return nil
	}
	for _, a := range args[1:] {
		for k, h := range a.Handles {
			src, ok := h.(*TensorDesc)
			if !ok || src == nil || src.Addr != self.Addr || (a.Kind == dispatch.ArgTensorList && !a.Tensors[k].Defined) {
				continue
			}
			if overlapOf(self, src) == overlapPartial {
				return dispatch.Errorf("%s", msgInputOverlap)
			}
		}
	}
	return nil
}

// overlap is how the memory of two tensors relates, as ATen's MemoryOverlap classifies it.
type overlap int

const (
	overlapNo overlap = iota
	overlapFull
	overlapPartial
	overlapTooHard // a layout the check cannot reason about: treated as no overlap, as ATen does
)

// checkOutOverlap applies the memory checks PyTorch's CPU kernels make on out=
// arguments before writing them: an out that keeps its shape may not have two
// elements at one address (an expanded tensor), and for ops whose rule says
// OutNoOverlap no out may (resized or not), nor share memory with any input,
// even fully (a gather or a cat into one of its own inputs). dsts are the out=
// arguments, inputs the other arguments.
func checkOutOverlap(rule *dispatch.Rule, inputs, dsts []dispatch.Arg, results []*hlo.Value) error {
	if err := checkOutsApart(rule, dsts); err != nil {
		return err
	}
	for i, d := range dsts {
		dst := d.Handles[0].(*TensorDesc)
		// Kernels that assert no overlap do so before resizing their out.
		keeps := i < len(results) && slices.Equal(dst.Sizes, results[i].T.Shape)
		if (keeps || rule.OutNoOverlap) && internalOverlap(dst) {
			return dispatch.Errorf("%s", msgInternalOverlap)
		}
		if !rule.OutNoOverlap {
			continue
		}
		for _, a := range inputs {
			for k, h := range a.Handles {
				src, ok := h.(*TensorDesc)
				if !ok || src == nil || (a.Kind == dispatch.ArgTensorList && !a.Tensors[k].Defined) {
					continue
				}
				if s := overlapOf(dst, src); s == overlapFull || s == overlapPartial {
					return dispatch.Errorf("%s", msgInputOverlap)
				}
			}
		}
	}
	return nil
}

// internalOverlap reports whether t certainly has two elements at one address:
// a dimension of size above one with stride zero, as ATen's has_internal_overlap
// decides it (other overlapping layouts are too hard and pass).
func internalOverlap(t *TensorDesc) bool {
	if t.CPU || denseNonOverlapping(t) {
		return false
	}
	for i, s := range t.Strides {
		if s == 0 && t.Sizes[i] > 1 {
			return true
		}
	}
	return false
}

// overlapOf classifies the memory of a against b as ATen's get_overlap_status does.
func overlapOf(a, b *TensorDesc) overlap {
	if a.CPU || b.CPU || a.Addr == 0 || b.Addr == 0 {
		return overlapNo
	}
	if a.Addr == b.Addr && a.Offset == b.Offset && a.DType == b.DType && slices.Equal(a.Sizes, b.Sizes) &&
		slices.Equal(a.Strides, b.Strides) {
		return overlapFull // the same tensor, even when empty
	}
	if numel(a.Sizes) == 0 || numel(b.Sizes) == 0 {
		return overlapNo
	}
	if !denseNonOverlapping(a) || !denseNonOverlapping(b) {
		return overlapTooHard
	}
	if a.Addr != b.Addr {
		return overlapNo
	}
	aSize, bSize := int64(a.DType.Size()), int64(b.DType.Size())
	aBegin, bBegin := a.Offset*aSize, b.Offset*bSize
	aEnd, bEnd := aBegin+numel(a.Sizes)*aSize, bBegin+numel(b.Sizes)*bSize
	if aBegin == bBegin && aEnd == bEnd {
		if slices.Equal(a.Strides, b.Strides) {
			return overlapFull
		}
		return overlapPartial
	}
	if aBegin < bEnd && bBegin < aEnd {
		return overlapPartial
	}
	return overlapNo
}

// denseNonOverlapping reports whether t's elements fill a block of memory
// exactly once in some order of its dimensions (ATen's is_non_overlapping_and_dense).
func denseNonOverlapping(t *TensorDesc) bool {
	if len(t.Strides) != len(t.Sizes) {
		return false
	}
	dims := make([]int, 0, len(t.Sizes))
	for i, n := range t.Sizes {
		if n != 1 {
			dims = append(dims, i)
		}
	}
	sort.SliceStable(dims, func(x, y int) bool { return t.Strides[dims[x]] < t.Strides[dims[y]] })
	want := int64(1)
	for _, i := range dims {
		if t.Sizes[i] == 0 {
			return true
		}
		if t.Strides[i] != want {
			return false
		}
		want *= t.Sizes[i]
	}
	return true
}
