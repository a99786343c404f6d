package dispatch

import (
	"math/bits"
	"slices"

	"torchtpu/hlo"
)

// searchCount returns, for every value in vals, where CPU's binary search
// over the last dimension of seq stops: it moves past an entry that is not
// >= the value (left side) or not > it (right side). For a sorted row that
// is the count of entries before the value, NaN values going last; an
// unsorted row gives CPU's answer too. seq is 1-D, or its leading dims match
// vals'. Each of the bits(m) halvings gathers one entry per value, where
// comparing with every entry cost m per value.
func searchCount(b *hlo.Builder, seq, vals *hlo.Value, right bool, out hlo.Elem) *hlo.Value {
	sr := seq.T.Rank()
	m := seq.T.Shape[sr-1]
	shape := vals.T.Shape
	k := func(v int64) *hlo.Value { return b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), v), shape) }
	if m == 0 {
		return b.Convert(k(0), out)
	}
	dir := hlo.GE
	if right {
		dir = hlo.GT
	}
	lo, hi, one := k(0), k(m), k(1)
	for range bits.Len64(uint64(m)) {
		active := b.Compare(hlo.LT, lo, hi)
		mid := b.Add(lo, b.ShiftRightLogical(b.Sub(hi, lo), one))
		at := b.Select(active, mid, k(0)) // a finished search may sit at m
		var entry *hlo.Value
		if sr == 1 {
			entry = b.GatherFlat(seq, at)
		} else {
			ones := slices.Repeat([]int64{1}, sr)
			entry = b.Gather(seq, fullIndices(b, at, int64(sr-1)), hlo.T(seq.T.Elem, shape...), nil, iotaDims(sr), iotaDims(sr), int64(sr), ones)
		}
		past := b.And(active, b.Not(b.Compare(dir, entry, vals)))
		lo = b.Select(past, b.Add(mid, one), lo)
		hi = b.Select(b.And(active, b.Not(past)), mid, hi)
	}
	return b.Convert(lo, out)
}

// searchsorted is searchsorted.Tensor/.Scalar(sorted_sequence, self, *,
// out_int32, right, side, sorter).
func searchsorted(c *Ctx) ([]*hlo.Value, error) {
	sm := c.Meta(0)
	if sm.Rank() == 0 {
		return nil, Errorf("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension")
	}
	right := c.Bool(3, false)
	if c.Has(4) {
		side := c.Str(4, "left")
		if side != "left" && side != "right" {
			return nil, Errorf("torch.searchsorted(): side can only be 'left' or 'right' but got %s", side)
		}
		if right && side == "left" {
			return nil, Errorf("torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True")
		}
		right = side == "right"
	}
	b := c.B
	var vals *hlo.Value
	var vd DType
	if c.IsTensor(1) {
		vm := c.Meta(1)
		vd = vm.DType
		if sm.Rank() > 1 {
			ok := vm.Rank() == sm.Rank()
			for i := 0; ok && i < sm.Rank()-1; i++ {
				ok = vm.Sizes[i] == sm.Sizes[i]
			}
			if !ok {
				return nil, Errorf("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor %s and input value tensor %s",
					shapeString(sm.Sizes), shapeString(vm.Sizes))
			}
		}
	} else {
		if sm.Rank() != 1 {
			return nil, Errorf("torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we got boundaries tensor dim(%d) and input value's dim(0) numel(1)", sm.Rank())
		}
		vd = c.Args[1].ScalarDType()
	}
	seq := c.T(0)
	if c.Has(5) && sm.Numel() > 0 {
		so := c.Meta(5)
		if so.DType != Int64 {
			return nil, Errorf("torch.searchsorted(): sorter must be a tensor of long dtype but got dtype %s", scalarTypeName(so.DType))
		}
		if !slices.Equal(so.Sizes, sm.Sizes) {
			return nil, Errorf("torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor %sand got sorter tensor %s",
				shapeString(sm.Sizes), shapeString(so.Sizes))
		}
		if err := c.checkIndices(5, sm.Sizes[sm.Rank()-1], func(int64) error {
			return Errorf("torch.searchsorted(): sorter index out of range") // a gather would clamp it
		}); err != nil {
			return nil, err
		}
		r := int64(sm.Rank())
		ones := make([]int64, r)
		for k := range ones {
			ones[k] = 1
		}
		seq = b.Gather(seq, fullIndices(b, c.T(5), r-1), seq.T, nil, iotaDims(int(r)), iotaDims(int(r)), r, ones)
	}
	d := PromoteTypes(sm.DType, vd)
	if c.IsTensor(1) {
		vals = b.Convert(c.T(1), d.Elem())
	} else {
		vals = c.Value(1, d)
	}
	out := hlo.S64
	if c.Bool(2, false) {
		out = hlo.S32
	}
	return []*hlo.Value{searchCount(b, b.Convert(seq, d.Elem()), vals, right, out)}, nil
}

// bucketize is bucketize.Tensor/.Scalar(self, boundaries, *, out_int32, right).
func bucketize(c *Ctx) ([]*hlo.Value, error) {
	bm := c.Meta(1)
	if bm.Rank() != 1 {
		return nil, Errorf("boundaries tensor must be 1 dimension, but got dim(%d)", bm.Rank())
	}
	b := c.B
	var d DType
	var vals *hlo.Value
	if c.IsTensor(0) {
		d = PromoteTypes(bm.DType, c.Meta(0).DType)
		vals = b.Convert(c.T(0), d.Elem())
	} else {
		d = PromoteTypes(bm.DType, c.Args[0].ScalarDType())
		vals = c.Value(0, d)
	}
	out := hlo.S64
	if c.Bool(2, false) {
		out = hlo.S32
	}
	return []*hlo.Value{searchCount(b, b.Convert(c.T(1), d.Elem()), vals, c.Bool(3, false), out)}, nil
}

func init() {
	def("aten::searchsorted.Tensor", searchsorted, "aten::searchsorted.Tensor_out").Needs = hostArgs(5)
	def("aten::searchsorted.Scalar", searchsorted, "aten::searchsorted.Scalar_out").Needs = hostArgs(5)
	def("aten::bucketize.Tensor", bucketize, "aten::bucketize.Tensor_out")
	def("aten::bucketize.Scalar", bucketize, "aten::bucketize.Scalar_out")
}
