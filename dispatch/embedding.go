package dispatch

import "torchtpu/hlo"

// embeddingDenseBackward is embedding_dense_backward(grad_output, indices,
// num_weights, padding_idx, scale_grad_by_freq): the rows of grad_output are
// scatter-added into a [num_weights, D] gradient by index; rows whose index is
// padding_idx contribute nothing, and with scale_grad_by_freq each row is
// divided by how often its index occurs.
func embeddingDenseBackward(c *Ctx) ([]*hlo.Value, error) {
	gm, im := c.Meta(0), c.Meta(1)
	if im.DType != Int64 && im.DType != Int32 {
		return nil, Errorf("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got %s instead (while checking arguments for embedding_backward)",
			scalarTypeName(im.DType))
	}
	if !gm.DType.IsFloat() {
		return nil, notImplemented("embedding_dense_backward_cpu", gm.DType)
	}
	w := c.Int(2, 0)
	n := im.Numel()
	if gm.Rank() < 1 || gm.Numel() != n*gm.Sizes[gm.Rank()-1] {
		return nil, Errorf("embedding_backward: grad_output of shape %s does not match indices of shape %s",
			shapeString(gm.Sizes), shapeString(im.Sizes))
	}
	dim := gm.Sizes[gm.Rank()-1]
	b := c.B
	acc := accumElem(gm.DType)
	out := full(b, FromElem(acc), []int64{w, dim}, 0)
	if n == 0 {
		return []*hlo.Value{b.Convert(out, gm.DType.Elem())}, nil
	}
	g := b.Reshape(b.Convert(c.T(0), acc), n, dim)
	idx := b.Reshape(b.Convert(c.T(1), hlo.S64), n)
	if pad := c.Int(3, -1); pad >= 0 {
		keep := b.Compare(hlo.NE, idx, b.BroadcastTo(b.Scalar(hlo.S64, float64(pad)), []int64{n}))
		g = b.Select(b.BroadcastInDim(keep, g.T.Shape, []int64{0}), g, full(b, FromElem(acc), g.T.Shape, 0))
	}
	if c.Bool(4, false) {
		ones := full(b, FromElem(acc), []int64{n}, 1)
		counts := b.ScatterFlat(full(b, FromElem(acc), []int64{w}, 0), idx, ones, addCombine)
		per := b.GatherFlat(counts, idx)
		g = b.Div(g, b.BroadcastInDim(per, g.T.Shape, []int64{0}))
	}
	r := b.Scatter(out, b.Reshape(idx, n, 1), g, []int64{1}, []int64{0}, []int64{0}, 1, addCombine)
	return []*hlo.Value{b.Convert(r, gm.DType.Elem())}, nil
}

func init() {
	def("aten::embedding_dense_backward", embeddingDenseBackward)
}
