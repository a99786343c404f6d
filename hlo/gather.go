package hlo

import (
	"fmt"
	"math"
	"strconv"
)

var (
	negInf = math.Inf(-1)
	posInf = math.Inf(1)
)

// GatherFlat reads x (rank 1) at the integer indices idx: the result has
// idx's shape.
func (b *Builder) GatherFlat(x, idx *Value) *Value {
	if x.T.Rank() != 1 {
		failf("gather_flat: operand %v is not rank 1", x.T)
	}
	r := idx.T.Rank()
	shape := append(append([]int64{}, idx.T.Shape...), 1)
	ind := b.Reshape(idx, shape...)
	attrs := fmt.Sprintf("{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = %d>, indices_are_sorted = false, slice_sizes = array<i64: 1>}", r)
	return b.op("stablehlo.gather", T(x.T.Elem, idx.T.Shape...), attrs, x, ind)
}

// Gather is StableHLO's general gather.
func (b *Builder) Gather(x, idx *Value, out Type, offsetDims, collapsed, startIndexMap []int64, indexVectorDim int64, sliceSizes []int64) *Value {
	attrs := "{dimension_numbers = #stablehlo.gather<offset_dims = " + intList(offsetDims) + ", collapsed_slice_dims = " +
		intList(collapsed) + ", start_index_map = " + intList(startIndexMap) + ", index_vector_dim = " +
		strconv.FormatInt(indexVectorDim, 10) + ">, indices_are_sorted = false, slice_sizes = " + i64Array(sliceSizes) + "}"
	return b.op("stablehlo.gather", out, attrs, x, idx)
}

// ScatterFlat writes upd into x (rank 1) at the integer indices idx (upd has
// idx's shape). With combine nil the update replaces the element; otherwise
// combine merges old and new (e.g. Add for index_add).
func (b *Builder) ScatterFlat(x, idx, upd *Value, combine func(rb *Builder, old, new *Value) *Value) *Value {
	if x.T.Rank() != 1 {
		failf("scatter_flat: operand %v is not rank 1", x.T)
	}
	r := idx.T.Rank()
	shape := append(append([]int64{}, idx.T.Shape...), 1)
	ind := b.Reshape(idx, shape...)
	st := T(x.T.Elem)
	body := b.region([]Type{st, st}, func(rb *Builder, a []*Value) []*Value {
		if combine == nil {
			return []*Value{a[1]}
		}
		return []*Value{combine(rb, a[0], a[1])}
	})
	attrs := fmt.Sprintf("{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = %d>, unique_indices = false}", r)
	return b.opN("stablehlo.scatter", []Type{x.T}, attrs, body, x, ind, upd)[0]
}

// Scatter is StableHLO's general scatter with a combining body (nil replaces).
func (b *Builder) Scatter(x, idx, upd *Value, updateWindowDims, insertedWindowDims, scatterDimsToOperand []int64, indexVectorDim int64, combine func(rb *Builder, old, new *Value) *Value) *Value {
	st := T(x.T.Elem)
	body := b.region([]Type{st, st}, func(rb *Builder, a []*Value) []*Value {
		if combine == nil {
			return []*Value{a[1]}
		}
		return []*Value{combine(rb, a[0], a[1])}
	})
	attrs := fmt.Sprintf("{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = %s, inserted_window_dims = %s, scatter_dims_to_operand_dims = %s, index_vector_dim = %d>, unique_indices = false}",
		intList(updateWindowDims), intList(insertedWindowDims), intList(scatterDimsToOperand), indexVectorDim)
	return b.opN("stablehlo.scatter", []Type{x.T}, attrs, body, x, idx, upd)[0]
}
