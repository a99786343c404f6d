package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// Embedding-bag reduction modes, as ATen numbers them.
const (
	bagSum  = 0
	bagMean = 1
	bagMax  = 2
)

func maxCombine(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value { return rb.Max(old, new) }
func minCombine(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value { return rb.Min(old, new) }

// gatherRows is x[idx] for x [W, D] and idx [N] (int64).
func gatherRows(b *hlo.Builder, x, idx *hlo.Value) *hlo.Value {
	n, d := idx.T.Shape[0], x.T.Shape[1]
	return b.Gather(x, b.Reshape(idx, n, 1), hlo.T(x.T.Elem, n, d), []int64{1}, []int64{0}, []int64{0}, 1, []int64{1, d})
}

// scatterRows combines the rows of upd [N, D] into out [B, D] at rows seg [N].
func scatterRows(b *hlo.Builder, out, seg, upd *hlo.Value, combine func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value) *hlo.Value {
	n := seg.T.Shape[0]
	return b.Scatter(out, b.Reshape(seg, n, 1), upd, []int64{1}, []int64{0}, []int64{0}, 1, combine)
}

// bagSegments reads offsets to the host and returns each index's bag
// (offset2bag) and the number of bags.
func (c *Ctx) bagSegments(arg int, n int64, includeLast bool) ([]int64, int64, error) {
	offs, err := c.R.Int64s(c.Args[arg].Handles[0])
	if err != nil {
		return nil, 0, err
	}
	bags := int64(len(offs))
	if includeLast {
		bags--
	}
	if bags < 0 {
		bags = 0
	}
	for i := int64(0); i < bags; i++ {
		if offs[i] < 0 || offs[i] > n || i > 0 && offs[i] < offs[i-1] {
			return nil, 0, Errorf("offsets has to be a 1 dimensional tensor of non-decreasing values in [0, %d], but got %d at %d", n, offs[i], i)
		}
	}
	if bags > 0 && offs[0] != 0 {
		return nil, 0, Errorf("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got %d", offs[0])
	}
	seg := make([]int64, n)
	bag := int64(0)
	for i := range seg {
		for bag+1 < bags && offs[bag+1] <= int64(i) {
			bag++
		}
		seg[i] = bag
	}
	return seg, bags, nil
}

// bagSegmentsOnDevice is bagSegments computed in the graph, for captured
// programs, which cannot read offsets to the host (and so do not check them):
// a 1 at each bag start after the first, summed along the indices.
func (c *Ctx) bagSegmentsOnDevice(arg int, n, m int64, includeLast bool) (*hlo.Value, int64) {
	b := c.B
	bags := m
	if includeLast {
		bags--
	}
	if bags <= 1 || n == 0 {
		return full(b, Int64, []int64{n}, 0), max(bags, 0)
	}
	starts := b.Slice(b.Convert(c.T(arg), hlo.S64), []int64{1}, []int64{bags}, []int64{1})
	starts = b.Min(b.Max(starts, full(b, Int64, []int64{bags - 1}, 0)), full(b, Int64, []int64{bags - 1}, float64(n)))
	marks := b.ScatterFlat(full(b, Int64, []int64{n + 1}, 0), starts, full(b, Int64, []int64{bags - 1}, 1), addCombine)
	sum := b.Scan([]*hlo.Value{marks}, []*hlo.Value{b.Scalar(hlo.S64, 0)}, 0, binaryBody((*hlo.Builder).Add))[0]
	return b.Slice(sum, []int64{0}, []int64{n}, []int64{1}), bags
}

// embeddingBag is aten::_embedding_bag (and _embedding_bag_forward_only):
// the sum, mean or max of the weight rows of each bag, with offset2bag,
// bag_size and max_indices for the backward.
func embeddingBag(c *Ctx) ([]*hlo.Value, error) {
	wm, im, om := c.Meta(0), c.Meta(1), c.Meta(2)
	if wm.Rank() != 2 {
		return nil, Errorf("weight has to be a 2D Tensor, but got Tensor of dimension %d", wm.Rank())
	}
	if im.Rank() != 1 || om.Rank() != 1 {
		return nil, Errorf("input has to be a 1D or 2D Tensor, but got Tensor of dimension %d", im.Rank())
	}
	if (im.DType != Int64 && im.DType != Int32) || (om.DType != Int64 && om.DType != Int32) {
		return nil, Errorf("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got %s instead", scalarTypeName(im.DType))
	}
	mode := c.Int(4, bagSum)
	if mode < bagSum || mode > bagMax {
		return nil, Errorf("Unknown mode for embedding_bag: %d", mode)
	}
	hasPSW := c.Has(6)
	if hasPSW && mode != bagSum {
		return nil, Errorf("embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='%s'). Please open a feature request on GitHub.",
			[]string{"sum", "mean", "max"}[mode])
	}
	n, d := im.Sizes[0], wm.Sizes[1]
	pad := c.Int(8, -1)
	if err := c.checkIndices(1, wm.Sizes[0], func(v int64) error {
		return Errorf("embedding_bag: Expected idx >= 0 && idx < num_embeddings (%d) but found idx to be %d", wm.Sizes[0], v)
	}); err != nil {
		return nil, err
	}
	var seg *hlo.Value
	var bags int64
	if c.NoHostChecks {
		seg, bags = c.bagSegmentsOnDevice(2, n, om.Sizes[0], c.Bool(7, false))
	} else {
		segs, nb, err := c.bagSegments(2, n, c.Bool(7, false))
		if err != nil {
			return nil, err
		}
		seg, bags = c.R.Int64Tensor(segs, []int64{n}), nb
	}
	b := c.B // after the offsets read, which may have started a new graph
	e := wm.DType.Elem()
	bagSize := full(b, Int64, []int64{bags}, 0)
	out := full(b, wm.DType, []int64{bags, d}, 0)
	var maxIdx *hlo.Value
	if mode == bagMax {
		maxIdx = full(b, Int64, []int64{bags, d}, -1)
	} else {
		maxIdx = full(b, Int64, []int64{bags}, 0)
	}
	if n == 0 || bags == 0 {
		return []*hlo.Value{out, seg, bagSize, maxIdx}, nil
	}
	idx := b.Convert(c.T(1), hlo.S64)
	keep := b.Compare(hlo.NE, idx, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), pad), []int64{n}))
	keep2 := b.BroadcastInDim(keep, []int64{n, d}, []int64{0})
	rows := gatherRows(b, c.T(0), idx)
	bagSize = b.ScatterFlat(bagSize, seg, b.Convert(keep, hlo.S64), addCombine)
	switch mode {
	case bagSum, bagMean:
		if hasPSW {
			rows = b.Mul(rows, b.BroadcastInDim(c.T(6), rows.T.Shape, []int64{0}))
		}
		acc := accumElem(wm.DType)
		rows = b.Select(keep2, b.Convert(rows, acc), full(b, FromElem(acc), rows.T.Shape, 0))
		sum := scatterRows(b, full(b, FromElem(acc), []int64{bags, d}, 0), seg, rows, addCombine)
		if mode == bagMean {
			cnt := b.Convert(b.Max(bagSize, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 1), []int64{bags})), acc)
			sum = b.Div(sum, b.BroadcastInDim(cnt, sum.T.Shape, []int64{0}))
		}
		out = b.Convert(sum, e)
	case bagMax:
		ninf := b.BroadcastTo(b.Scalar(e, math.Inf(-1)), rows.T.Shape)
		rows = b.Select(keep2, rows, ninf)
		mx := scatterRows(b, b.BroadcastTo(b.Scalar(e, math.Inf(-1)), []int64{bags, d}), seg, rows, maxCombine)
		// The first position in each bag that holds the maximum.
		pos := b.Iota(hlo.T(hlo.S64, n, d), 0)
		hit := b.And(keep2, b.Compare(hlo.EQ, rows, gatherRows(b, mx, seg)))
		big := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), n), []int64{n, d})
		first := scatterRows(b, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), n), []int64{bags, d}), seg, b.Select(hit, pos, big), minCombine)
		idxExt := b.Concatenate(0, idx, b.ConstantInt(hlo.T(hlo.S64, 1), -1))
		maxIdx = b.GatherFlat(idxExt, first)
		empty := b.BroadcastInDim(b.Compare(hlo.EQ, bagSize, full(b, Int64, []int64{bags}, 0)), []int64{bags, d}, []int64{0})
		out = b.Select(empty, full(b, wm.DType, []int64{bags, d}, 0), mx)
	}
	return []*hlo.Value{out, seg, bagSize, maxIdx}, nil
}

// embeddingBagBackward is aten::_embedding_bag_dense_backward(grad, indices,
// offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq,
// mode, per_sample_weights, padding_idx): the dense gradient of the weight.
// (_embedding_bag_backward is ATen's router, registered by the shim: it
// comes here for dense gradients and builds sparse ones from dense ops.)
func embeddingBagBackward(c *Ctx) ([]*hlo.Value, error) {
	gm, im := c.Meta(0), c.Meta(1)
	w := c.Int(5, 0)
	mode := c.Int(7, bagSum)
	scale := c.Bool(6, false)
	n, d := im.Numel(), gm.Sizes[1]
	pad := c.Int(9, -1)
	b := c.B
	acc := accumElem(gm.DType)
	zero := full(b, FromElem(acc), []int64{w, d}, 0)
	if n == 0 {
		return []*hlo.Value{b.Convert(zero, gm.DType.Elem())}, nil
	}
	g := b.Convert(c.T(0), acc)
	idx := b.Reshape(b.Convert(c.T(1), hlo.S64), n)
	if mode == bagMax {
		mi := b.Reshape(c.T(4), gm.Sizes[0]*d)
		col := b.Reshape(b.Iota(hlo.T(hlo.S64, gm.Sizes[0], d), 1), gm.Sizes[0]*d)
		valid := b.Compare(hlo.GE, mi, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 0), mi.T.Shape))
		flat := b.Select(valid, b.Add(b.Mul(mi, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), d), mi.T.Shape)), col),
			b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), w*d), mi.T.Shape))
		r := b.ScatterFlat(full(b, FromElem(acc), []int64{w*d + 1}, 0), flat, b.Reshape(g, gm.Sizes[0]*d), addCombine)
		r = b.Reshape(b.Slice(r, []int64{0}, []int64{w * d}, []int64{1}), w, d)
		return []*hlo.Value{b.Convert(r, gm.DType.Elem())}, nil
	}
	seg := b.Convert(c.T(2), hlo.S64)
	rows := gatherRows(b, g, seg)
	if mode == bagMean {
		cnt := b.Convert(b.GatherFlat(c.T(3), seg), acc)
		cnt = b.Max(cnt, b.BroadcastTo(b.Scalar(acc, 1), cnt.T.Shape))
		rows = b.Div(rows, b.BroadcastInDim(cnt, rows.T.Shape, []int64{0}))
	}
	if c.Has(8) {
		rows = b.Mul(rows, b.BroadcastInDim(b.Convert(c.T(8), acc), rows.T.Shape, []int64{0}))
	}
	keep := b.Compare(hlo.NE, idx, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), pad), []int64{n}))
	rows = b.Select(b.BroadcastInDim(keep, rows.T.Shape, []int64{0}), rows, full(b, FromElem(acc), rows.T.Shape, 0))
	if scale {
		counts := b.ScatterFlat(full(b, FromElem(acc), []int64{w}, 0), idx, full(b, FromElem(acc), []int64{n}, 1), addCombine)
		rows = b.Div(rows, b.BroadcastInDim(b.GatherFlat(counts, idx), rows.T.Shape, []int64{0}))
	}
	r := scatterRows(b, zero, idx, rows, addCombine)
	return []*hlo.Value{b.Convert(r, gm.DType.Elem())}, nil
}

// embeddingBagPSWBackward is aten::_embedding_bag_per_sample_weights_backward
// (grad, weight, indices, offsets, offset2bag, mode, padding_idx): for each
// index, the dot product of its bag's gradient with its weight row.
func embeddingBagPSWBackward(c *Ctx) ([]*hlo.Value, error) {
	im, wm := c.Meta(2), c.Meta(1)
	if c.Int(5, bagSum) != bagSum {
		return nil, Errorf("embedding_bag_backward: per_sample_weights only supported for mode='sum'")
	}
	n := im.Numel()
	b := c.B
	acc := accumElem(wm.DType)
	if n == 0 {
		return []*hlo.Value{full(b, wm.DType, []int64{0}, 0)}, nil
	}
	pad := c.Int(6, -1)
	idx := b.Convert(c.T(2), hlo.S64)
	seg := b.Convert(c.T(4), hlo.S64)
	g := gatherRows(b, b.Convert(c.T(0), acc), seg)
	rows := gatherRows(b, b.Convert(c.T(1), acc), idx)
	dot := b.Reduce(b.Mul(g, rows), b.Scalar(acc, 0), hlo.ReduceSum, 1)
	keep := b.Compare(hlo.NE, idx, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), pad), []int64{n}))
	dot = b.Select(keep, dot, full(b, FromElem(acc), []int64{n}, 0))
	return []*hlo.Value{b.Convert(dot, wm.DType.Elem())}, nil
}

// embeddingRenorm is aten::embedding_renorm(self, indices, max_norm,
// norm_type): the rows of self named by indices whose norm exceeds max_norm
// are scaled to max_norm / (norm + 1e-7).
func embeddingRenorm(c *Ctx) ([]*hlo.Value, error) {
	wm, im := c.Meta(0), c.Meta(1)
	if wm.Rank() != 2 {
		return nil, Errorf("embedding_renorm: self has to be a 2D Tensor, but got Tensor of dimension %d", wm.Rank())
	}
	if im.DType != Int64 && im.DType != Int32 {
		return nil, Errorf("Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int; but got %s instead", scalarTypeName(im.DType))
	}
	if !wm.DType.IsFloat() {
		return nil, notImplemented("embedding_renorm_", wm.DType)
	}
	b := c.B
	w, n := wm.Sizes[0], im.Numel()
	if n == 0 {
		return []*hlo.Value{c.T(0)}, nil
	}
	e := wm.DType.Elem()
	acc := accumElem(wm.DType)
	x := b.Convert(c.T(0), acc)
	idx := b.Reshape(b.Convert(c.T(1), hlo.S64), n)
	touched := b.ScatterFlat(full(b, Bool, []int64{w}, 0), idx, full(b, Bool, []int64{n}, 1), nil)
	norm := distNorm(b, x, c.Float(3, 2))
	maxNorm := b.BroadcastTo(b.Convert(c.R.Scalar(c.Float(2, 0), e), acc), []int64{w})
	scale := b.Div(maxNorm, b.Add(norm, b.BroadcastTo(b.Scalar(acc, 1e-7), []int64{w})))
	scale = b.Select(b.And(touched, b.Compare(hlo.GT, norm, maxNorm)), scale, full(b, FromElem(acc), []int64{w}, 1))
	return []*hlo.Value{b.Convert(b.Mul(x, b.BroadcastInDim(scale, x.T.Shape, []int64{0})), e)}, nil
}

func init() {
	def("aten::embedding_renorm", embeddingRenorm, "aten::embedding_renorm.out")
	def("aten::_embedding_bag", embeddingBag, "aten::_embedding_bag.out").Needs = Needs{HostArgs: []int{1, 2}, Uploads: true}
	def("aten::_embedding_bag_forward_only", embeddingBag, "aten::_embedding_bag_forward_only.out").Needs = Needs{HostArgs: []int{1, 2}, Uploads: true}
	def("aten::_embedding_bag_dense_backward", embeddingBagBackward, "aten::_embedding_bag_dense_backward.out")
	def("aten::_embedding_bag_per_sample_weights_backward", embeddingBagPSWBackward,
		"aten::_embedding_bag_per_sample_weights_backward.out")
}
