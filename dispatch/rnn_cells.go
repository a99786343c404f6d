package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// PyTorch runs nn.LSTM, nn.GRU and their cells on a non-CPU device through
// fused cell kernels: the module computes the input and hidden projections
// with matmuls and hands the gate pre-activations to one kernel per time step.
// The rules below are those kernels. Each forward also returns a workspace,
// the activations its backward needs, laid out as CUDA's kernels lay it out
// (so the meta functions torch.compile traces with agree on its shape):
// LSTM [B, 4H] holds the activated gates i, f, g, o; GRU [B, 5H] holds
// r, z, n, hx and the hidden candidate gate (with its bias).

// gateChunks splits x [B, k*H] into k pieces of [B, H] along dimension 1.
func gateChunks(b *hlo.Builder, x *hlo.Value, k int64) []*hlo.Value {
	rows, h := x.T.Shape[0], x.T.Shape[1]/k
	out := make([]*hlo.Value, k)
	for i := range out {
		out[i] = b.Slice(x, []int64{0, int64(i) * h}, []int64{rows, int64(i+1) * h}, []int64{1, 1})
	}
	return out
}

// checkCellSizes checks the gate and bias shapes of a fused cell with k gates
// against its state prev [B, H], with CPU's messages.
func checkCellSizes(c *Ctx, k int64, prev int) error {
	ig, hg, st := c.Meta(0), c.Meta(1), c.Meta(prev)
	if ig.Rank() != 2 || !slices.Equal(ig.Sizes, hg.Sizes) {
		return Errorf("Expected input_gates and hidden_gates to be 2-D tensors of the same size, but got %s and %s",
			shapeString(ig.Sizes), shapeString(hg.Sizes))
	}
	if st.Rank() != 2 || st.Sizes[0] != ig.Sizes[0] || st.Sizes[1]*k != ig.Sizes[1] {
		return Errorf("Expected the gates %s to be [%d, %d * hidden_size] for a state of size %s",
			shapeString(ig.Sizes), st.Sizes[0], k, shapeString(st.Sizes))
	}
	if ig.DType != hg.DType || ig.DType != st.DType || !ig.DType.IsFloat() {
		return Errorf("Expected floating gates and state of one dtype, but got %s, %s and %s", ig.DType, hg.DType, st.DType)
	}
	for _, i := range []int{3, 4} {
		if c.IsTensor(i) && (c.Meta(i).Rank() != 1 || c.Meta(i).Sizes[0] != ig.Sizes[1]) {
			return Errorf("Expected the bias to be of size [%d], but got %s", ig.Sizes[1], shapeString(c.Meta(i).Sizes))
		}
	}
	return nil
}

// gatesWithBias returns gate argument i in the accumulation type acc, plus
// its optional bias argument j broadcast over the batch.
func gatesWithBias(c *Ctx, i, j int, acc hlo.Elem) *hlo.Value {
	b := c.B
	g := b.Convert(c.T(i), acc)
	if bias := c.optional(j, acc); bias != nil {
		g = b.Add(g, b.BroadcastInDim(bias, g.T.Shape, []int64{1}))
	}
	return g
}

// onesLike returns 1 of x's type and shape.
func onesLike(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return b.BroadcastTo(b.Scalar(x.T.Elem, 1), x.T.Shape)
}

// sigmoidSlope is s * (1 - s), the derivative of the sigmoid with value s.
func sigmoidSlope(b *hlo.Builder, s *hlo.Value) *hlo.Value { return b.Mul(s, b.Sub(onesLike(b, s), s)) }

// tanhSlope is 1 - t², the derivative of tanh with value t.
func tanhSlope(b *hlo.Builder, t *hlo.Value) *hlo.Value { return b.Sub(onesLike(b, t), b.Mul(t, t)) }

// fusedLSTMCell is _thnn_fused_lstm_cell(input_gates, hidden_gates, cx,
// input_bias, hidden_bias) -> (hy, cy, workspace).
func fusedLSTMCell(c *Ctx) ([]*hlo.Value, error) {
	if err := checkCellSizes(c, 4, 2); err != nil {
		return nil, err
	}
	b := c.B
	e := c.Meta(0).DType.Elem()
	acc := accumElem(c.Meta(0).DType)
	gates := b.Add(gatesWithBias(c, 0, 3, acc), gatesWithBias(c, 1, 4, acc))
	ch := gateChunks(b, gates, 4)
	i, f, g, o := b.Logistic(ch[0]), b.Logistic(ch[1]), b.Tanh(ch[2]), b.Logistic(ch[3])
	cx := b.Convert(c.T(2), acc)
	cy := b.Add(b.Mul(f, cx), b.Mul(i, g))
	hy := b.Mul(o, b.Tanh(cy))
	ws := b.Concatenate(1, i, f, g, o)
	return []*hlo.Value{b.Convert(hy, e), b.Convert(cy, e), b.Convert(ws, e)}, nil
}

// fusedLSTMCellBackward is _thnn_fused_lstm_cell_backward_impl(grad_hy,
// grad_cy, cx, cy, workspace, has_bias) -> (grad_gates, grad_cx, grad_bias);
// an absent grad_hy or grad_cy counts as zeros, and grad_bias is zeros
// without a bias (the shim returns no undefined tensors; autograd drops it).
func fusedLSTMCellBackward(c *Ctx) ([]*hlo.Value, error) {
	cxm, ws := c.Meta(2), c.Meta(4)
	if cxm.Rank() != 2 || ws.Rank() != 2 || ws.Sizes[0] != cxm.Sizes[0] || ws.Sizes[1] != 4*cxm.Sizes[1] ||
		!slices.Equal(c.Meta(3).Sizes, cxm.Sizes) {
		return nil, Errorf("Expected cx and cy of size [B, H] and a workspace of size [B, 4 * H], but got %s, %s and %s",
			shapeString(cxm.Sizes), shapeString(c.Meta(3).Sizes), shapeString(ws.Sizes))
	}
	for _, k := range []int{0, 1} {
		if c.IsTensor(k) && !slices.Equal(c.Meta(k).Sizes, cxm.Sizes) {
			return nil, Errorf("Expected the gradient %s to match the state's size %s", shapeString(c.Meta(k).Sizes), shapeString(cxm.Sizes))
		}
	}
	b := c.B
	e := cxm.DType.Elem()
	acc := accumElem(cxm.DType)
	zeros := b.BroadcastTo(b.Scalar(acc, 0), cxm.Sizes)
	ghy, gcy := zeros, zeros
	if v := c.optional(0, acc); v != nil {
		ghy = v
	}
	if v := c.optional(1, acc); v != nil {
		gcy = v
	}
	ch := gateChunks(b, b.Convert(c.T(4), acc), 4)
	i, f, g, o := ch[0], ch[1], ch[2], ch[3]
	cx, cy := b.Convert(c.T(2), acc), b.Convert(c.T(3), acc)
	tcy := b.Tanh(cy)
	gcx := b.Add(b.Mul(b.Mul(ghy, o), tanhSlope(b, tcy)), gcy)
	gi := b.Mul(b.Mul(gcx, g), sigmoidSlope(b, i))
	gf := b.Mul(b.Mul(gcx, cx), sigmoidSlope(b, f))
	gg := b.Mul(b.Mul(gcx, i), tanhSlope(b, g))
	gout := b.Mul(b.Mul(ghy, tcy), sigmoidSlope(b, o))
	gates := b.Concatenate(1, gi, gf, gg, gout)
	gbias := maskedOut(b, c.Bool(5, false), func() *hlo.Value { return sumOver(b, gates, 0) }, e, []int64{ws.Sizes[1]})
	return []*hlo.Value{b.Convert(gates, e), b.Convert(b.Mul(gcx, f), e), gbias}, nil
}

// fusedGRUCell is _thnn_fused_gru_cell(input_gates, hidden_gates, hx,
// input_bias, hidden_bias) -> (hy, workspace).
func fusedGRUCell(c *Ctx) ([]*hlo.Value, error) {
	if err := checkCellSizes(c, 3, 2); err != nil {
		return nil, err
	}
	b := c.B
	e := c.Meta(0).DType.Elem()
	acc := accumElem(c.Meta(0).DType)
	ig := gateChunks(b, gatesWithBias(c, 0, 3, acc), 3)
	hg := gateChunks(b, gatesWithBias(c, 1, 4, acc), 3)
	r := b.Logistic(b.Add(ig[0], hg[0]))
	z := b.Logistic(b.Add(ig[1], hg[1]))
	n := b.Tanh(b.Add(ig[2], b.Mul(r, hg[2])))
	hx := b.Convert(c.T(2), acc)
	hy := b.Add(n, b.Mul(z, b.Sub(hx, n)))
	ws := b.Concatenate(1, r, z, n, hx, hg[2])
	return []*hlo.Value{b.Convert(hy, e), b.Convert(ws, e)}, nil
}

// fusedGRUCellBackward is _thnn_fused_gru_cell_backward(grad_hy, workspace,
// has_bias) -> (grad_input_gates, grad_hidden_gates, grad_hx,
// grad_input_bias, grad_hidden_bias).
func fusedGRUCellBackward(c *Ctx) ([]*hlo.Value, error) {
	gm, ws := c.Meta(0), c.Meta(1)
	if gm.Rank() != 2 || ws.Rank() != 2 || ws.Sizes[0] != gm.Sizes[0] || ws.Sizes[1] != 5*gm.Sizes[1] {
		return nil, Errorf("Expected grad_hy of size [B, H] and a workspace of size [B, 5 * H], but got %s and %s",
			shapeString(gm.Sizes), shapeString(ws.Sizes))
	}
	b := c.B
	e := gm.DType.Elem()
	acc := accumElem(gm.DType)
	gh := b.Convert(c.T(0), acc)
	w := gateChunks(b, b.Convert(c.T(1), acc), 5)
	r, z, n, hx, hn := w[0], w[1], w[2], w[3], w[4]
	gn := b.Mul(b.Mul(gh, b.Sub(onesLike(b, z), z)), tanhSlope(b, n))
	gz := b.Mul(b.Mul(gh, b.Sub(hx, n)), sigmoidSlope(b, z))
	gr := b.Mul(b.Mul(gn, hn), sigmoidSlope(b, r))
	in := b.Concatenate(1, gr, gz, gn)
	hid := b.Concatenate(1, gr, gz, b.Mul(gn, r))
	bias := c.Bool(2, false)
	h3 := []int64{3 * gm.Sizes[1]}
	gib := maskedOut(b, bias, func() *hlo.Value { return sumOver(b, in, 0) }, e, h3)
	ghb := maskedOut(b, bias, func() *hlo.Value { return sumOver(b, hid, 0) }, e, h3)
	return []*hlo.Value{b.Convert(in, e), b.Convert(hid, e), b.Convert(b.Mul(gh, z), e), gib, ghb}, nil
}

func init() {
	def("aten::_thnn_fused_lstm_cell", fusedLSTMCell, "")
	def("aten::_thnn_fused_lstm_cell_backward_impl", fusedLSTMCellBackward, "")
	def("aten::_thnn_fused_gru_cell", fusedGRUCell, "")
	def("aten::_thnn_fused_gru_cell_backward", fusedGRUCellBackward, "")
}
