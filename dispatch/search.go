package dispatch

import (
	"slices"
	"torchtpu/hlo"
)

// searchCount returns, for every value in vals, how many entries of the
// sorted last dimension of seq lie before it: those not >= it (left side)
// or not > it (right side), which is where a binary search would stop,
// NaN values included. seq is 1-D, or its leading dims match vals'.
func searchCount(b *hlo.Builder, seq, vals *hlo.Value, right bool, out hlo.Elem) *hlo.Value {
	vr, sr := vals.T.Rank(), seq.T.Rank()
	m := seq.T.Shape[sr-1]
	if m == 0 {
		return b.BroadcastTo(b.ConstantInt(hlo.T(out), 0), vals.T.Shape)
	}
	shape := append(append([]int64{}, vals.T.Shape...), m)
	vB := b.BroadcastInDim(vals, shape, iotaDims(vr))
	var sMap []int64
	if sr == 1 {
		sMap = []int64{int64(vr)}
	} else {
		sMap = append(iotaDims(sr-1), int64(vr))
	}
	sB := b.BroadcastInDim(seq, shape, sMap)
	dir := hlo.GE
	if right {
		dir = hlo.GT
	}
	before := b.Not(b.Compare(dir, sB, vB))
	n := b.Reduce(b.Convert(before, hlo.S64), b.ConstantInt(hlo.T(hlo.S64), 0), hlo.ReduceSum, int64(vr))
	return b.Convert(n, out)
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
		if so.DType != Int64 || !slices.Equal(so.Sizes, sm.Sizes) {
			return nil, Errorf("torch.searchsorted(): sorter and boundaries must have the same size and be of dtype int64")
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
	def("aten::searchsorted.Tensor", searchsorted, "aten::searchsorted.Tensor_out")
	def("aten::searchsorted.Scalar", searchsorted, "aten::searchsorted.Scalar_out")
	def("aten::bucketize.Tensor", bucketize, "aten::bucketize.Tensor_out")
	def("aten::bucketize.Scalar", bucketize, "aten::bucketize.Scalar_out")
}
