package dispatch

import (
	"math"
	"slices"

	"torchtpu/hlo"
)

// histEdges returns bins+1 evenly spaced edges from lo to hi (rank-0 f64
// values) in element type e, as CPU's linspace forms them: from the start
// for the first half, from the end for the second.
func histEdges(b *hlo.Builder, e hlo.Elem, lo, hi *hlo.Value, bins int64) *hlo.Value {
	n := bins + 1
	t := hlo.T(e, n)
	s := b.BroadcastTo(b.Convert(lo, e), []int64{n})
	end := b.BroadcastTo(b.Convert(hi, e), []int64{n})
	step := b.Div(b.Sub(end, s), b.Constant(t, float64(bins)))
	if bins == 0 {
		step = b.Constant(t, 0)
	}
	i := b.Iota(t, 0)
	fromStart := b.Add(s, b.Mul(step, i))
	fromEnd := b.Sub(end, b.Mul(step, b.Sub(b.Constant(t, float64(bins)), i)))
	first := b.Compare(hlo.LT, b.Iota(hlo.T(hlo.S64, n), 0), b.ConstantInt(hlo.T(hlo.S64, n), n/2))
	return b.Select(first, fromStart, fromEnd)
}

// outerEdges returns the leftmost and rightmost edge (rank-0 f64) of each of
// the D columns of x [M, D]: the range argument's pairs when given, else each
// column's minimum and maximum (0 and 1 for empty input), widened by 0.5 on
// both sides where they are equal.
func (c *Ctx) outerEdges(x *hlo.Value, m, d int64, rangeArg int) ([]*hlo.Value, []*hlo.Value, error) {
	b := c.B
	var los, his []*hlo.Value
	var rng []float64
	if c.Has(rangeArg) {
		rng = c.Args[rangeArg].Doubles
	}
	if c.Has(rangeArg) && int64(len(rng)) != 2*d {
		return nil, nil, Errorf("histogramdd(): for a %d-dimensional histogram range should have %d elements, but got %d", d, 2*d, len(rng))
	}
	for k := int64(0); k < d; k++ {
		var lo, hi *hlo.Value
		switch {
		case c.Has(rangeArg):
			if rng[2*k] > rng[2*k+1] {
				return nil, nil, Errorf("histogramdd(): min should not exceed max, but got min %g max %g for dimension %d", rng[2*k], rng[2*k+1], k)
			}
			lo, hi = c.R.Scalar(rng[2*k], hlo.F64), c.R.Scalar(rng[2*k+1], hlo.F64)
		case m == 0:
			lo, hi = b.Scalar(hlo.F64, 0), b.Scalar(hlo.F64, 1)
		default:
			col := b.Reshape(b.Slice(x, []int64{0, k}, []int64{m, k + 1}, []int64{1, 1}), m)
			e := x.T.Elem
			lo = b.Convert(b.Reduce(col, b.Scalar(e, hlo.Highest(e)), hlo.ReduceMin, 0), hlo.F64)
			hi = b.Convert(b.Reduce(col, b.Scalar(e, hlo.Lowest(e)), hlo.ReduceMax, 0), hlo.F64)
		}
		same := b.Compare(hlo.EQ, lo, hi)
		half := b.Scalar(hlo.F64, 0.5)
		los = append(los, b.Select(same, b.Sub(lo, half), lo))
		his = append(his, b.Select(same, b.Add(hi, half), hi))
	}
	return los, his, nil
}

// histCount bins the M points of x [M, D] by the edges of each column and
// sums their weights (ones when weight is nil) per bin, as CPU does: a point
// counts when it lies within the outer edges in every column, the bin is the
// last edge not above it, and the last bin includes its right edge. With
// density the counts are divided by their total and by each bin's widths.
func histCount(b *hlo.Builder, x *hlo.Value, edges []*hlo.Value, weight *hlo.Value, density bool) *hlo.Value {
	m, e := x.T.Shape[0], x.T.Elem
	shape := make([]int64, len(edges))
	valid := b.BroadcastTo(b.Scalar(hlo.Pred, 1), []int64{m})
	flat := b.ConstantInt(hlo.T(hlo.S64, m), 0)
	for k, ed := range edges {
		nb := ed.T.Shape[0] - 1
		shape[k] = nb
		col := b.Reshape(b.Slice(x, []int64{0, int64(k)}, []int64{m, int64(k) + 1}, []int64{1, 1}), m)
		me := []int64{m, nb + 1}
		le := b.Compare(hlo.LE, b.BroadcastInDim(ed, me, []int64{1}), b.BroadcastInDim(col, me, []int64{0}))
		pos := b.Reduce(b.Convert(le, hlo.S64), b.ConstantInt(hlo.T(hlo.S64), 0), hlo.ReduceSum, 1)
		pos = b.Clamp(b.ConstantInt(hlo.T(hlo.S64), 0), b.Sub(pos, b.ConstantInt(hlo.T(hlo.S64, m), 1)), b.ConstantInt(hlo.T(hlo.S64), nb-1))
		first := b.BroadcastTo(b.Reshape(b.Slice(ed, []int64{0}, []int64{1}, []int64{1})), []int64{m})
		last := b.BroadcastTo(b.Reshape(b.Slice(ed, []int64{nb}, []int64{nb + 1}, []int64{1})), []int64{m})
		valid = b.And(valid, b.And(b.Compare(hlo.GE, col, first), b.Compare(hlo.LE, col, last)))
		flat = b.Add(b.Mul(flat, b.ConstantInt(hlo.T(hlo.S64, m), nb)), pos)
	}
	total := numel(shape)
	w := b.Constant(hlo.T(e, m), 1)
	if weight != nil {
		w = weight
	}
	w = b.Select(valid, w, b.Constant(hlo.T(e, m), 0))
	hist := b.Constant(hlo.T(e, total), 0)
	if m > 0 && total > 0 {
		hist = b.ScatterFlat(hist, flat, w, func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value { return rb.Add(old, new) })
	}
	hist = b.Reshape(hist, shape...)
	if density {
		sum := b.Reduce(hist, b.Scalar(e, 0), hlo.ReduceSum, seq(len(shape))...)
		hist = b.Div(hist, b.BroadcastTo(sum, shape))
		for k, ed := range edges {
			nb := shape[k]
			width := b.Sub(b.Slice(ed, []int64{1}, []int64{nb + 1}, []int64{1}), b.Slice(ed, []int64{0}, []int64{nb}, []int64{1}))
			hist = b.Div(hist, b.BroadcastInDim(width, shape, []int64{int64(k)}))
		}
	}
	return hist
}

// histInput reads self (argument 0) as [M, D] points, D = 1 for histogram
// (flattened) or self's last dimension for histogramdd, and the optional
// weight at argument wi as [M].
func (c *Ctx) histInput(dd bool, wi int) (*hlo.Value, *hlo.Value, int64, int64, error) {
	m := c.Meta(0)
	if m.DType != Float32 && m.DType != Float64 {
		return nil, nil, 0, 0, Errorf("torch.histogramdd: input tensor and bins tensors should have the same dtype, and it should be floating point, but got %s", scalarTypeName(m.DType))
	}
	d := int64(1)
	if dd {
		if m.Rank() < 2 {
			return nil, nil, 0, 0, Errorf("torch.histogramdd: input tensor should have at least 2 dimensions, but got %d", m.Rank())
		}
		d = m.Sizes[m.Rank()-1]
	}
	pts := m.Numel() / max(d, 1)
	x := c.B.Reshape(c.T(0), pts, d)
	var w *hlo.Value
	if c.Has(wi) {
		wm := c.Meta(wi)
		if wm.Numel() != pts || wm.DType != m.DType {
			return nil, nil, 0, 0, Errorf("torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor excluding its innermost dimension, and the same dtype")
		}
		w = c.B.Reshape(c.T(wi), pts)
	}
	return x, w, pts, d, nil
}

// binCountEdges returns the edges of each dimension for the bins counts of
// argument 1 and the range of argument 2.
func (c *Ctx) binCountEdges(x *hlo.Value, m, d int64, bins []int64) ([]*hlo.Value, error) {
	if int64(len(bins)) != d {
		return nil, Errorf("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
	}
	los, his, err := c.outerEdges(x, m, d, 2)
	if err != nil {
		return nil, err
	}
	edges := make([]*hlo.Value, d)
	for k := range edges {
		if bins[k] <= 0 {
			return nil, Errorf("histogramdd(): bins must be > 0, but got %d for dimension %d", bins[k], k)
		}
		edges[k] = histEdges(c.B, x.T.Elem, los[k], his[k], bins[k])
	}
	return edges, nil
}

// histogramBinCt is histogram.bin_ct(self, bins, *, range, weight, density) -> (hist, bin_edges).
func histogramBinCt(c *Ctx) ([]*hlo.Value, error) {
	x, w, m, d, err := c.histInput(false, 3)
	if err != nil {
		return nil, err
	}
	edges, err := c.binCountEdges(x, m, d, []int64{c.Int(1, 100)})
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{histCount(c.B, x, edges, w, c.Bool(4, false)), edges[0]}, nil
}

// histogramBinsTensor is histogram.bins_tensor(self, bins, *, weight, density) -> (hist, bin_edges).
func histogramBinsTensor(c *Ctx) ([]*hlo.Value, error) {
	x, w, _, _, err := c.histInput(false, 2)
	if err != nil {
		return nil, err
	}
	bm := c.Meta(1)
	if bm.Rank() != 1 || bm.Numel() < 1 || bm.DType != c.Meta(0).DType {
		return nil, Errorf("torch.histogramdd: bins tensor should have one dimension and at least 1 element, and the input's dtype")
	}
	e := c.T(1)
	return []*hlo.Value{histCount(c.B, x, []*hlo.Value{e}, w, c.Bool(3, false)), e}, nil
}

// histogramddBinEdges is _histogramdd_bin_edges(self, bins, *, range, weight, density) -> Tensor[].
func histogramddBinEdges(c *Ctx) ([]*hlo.Value, error) {
	x, _, m, d, err := c.histInput(true, 3)
	if err != nil {
		return nil, err
	}
	return c.binCountEdges(x, m, d, c.Ints(1, nil))
}

// histogramddFromBinCts is _histogramdd_from_bin_cts(self, bins, *, range, weight, density).
func histogramddFromBinCts(c *Ctx) ([]*hlo.Value, error) {
	x, w, m, d, err := c.histInput(true, 3)
	if err != nil {
		return nil, err
	}
	edges, err := c.binCountEdges(x, m, d, c.Ints(1, nil))
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{histCount(c.B, x, edges, w, c.Bool(4, false))}, nil
}

// histogramddFromBinTensors is _histogramdd_from_bin_tensors(self, bins, *, weight, density).
func histogramddFromBinTensors(c *Ctx) ([]*hlo.Value, error) {
	x, w, _, d, err := c.histInput(true, 2)
	if err != nil {
		return nil, err
	}
	if int64(len(c.Args[1].Tensors)) != d {
		return nil, Errorf("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
	}
	for _, t := range c.Args[1].Tensors {
		if t.Rank() != 1 || t.Numel() < 1 {
			return nil, Errorf("torch.histogramdd: bins tensors should have one dimension and at least 1 element")
		}
	}
	return []*hlo.Value{histCount(c.B, x, c.List(1), w, c.Bool(3, false))}, nil
}

// histc is histc(self, bins, min, max): a histogram of bins equal-width bins
// over [min, max] (the data's range when min == max); elements outside it
// are ignored.
func histc(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	bins := c.Int(1, 100)
	if bins <= 0 {
		return nil, Errorf("torch.histogram(): bins must be > 0, but got %d for dimension 0", bins)
	}
	lo, hi := c.Float(2, 0), c.Float(3, 0)
	if lo > hi {
		return nil, Errorf("torch.histc: max must be larger than min")
	}
	if m.DType.IsIntegral(false) {
		return histcInt(c, m, bins, lo, hi)
	}
	if !m.DType.IsFloat() {
		return nil, notImplemented("histogram_cpu", m.DType)
	}
	notFinite := func(lo, hi float64) error {
		return Errorf("torch.histc: range of [%s, %s] is not finite", cDouble(lo), cDouble(hi))
	}
	if lo != hi && (math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi)) {
		return nil, notFinite(lo, hi)
	}
	b := c.B
	acc := accumElem(m.DType)
	n := m.Numel()
	x := b.Reshape(b.Convert(c.T(0), acc), n)
	loV, hiV := c.R.Scalar(lo, acc), c.R.Scalar(hi, acc)
	if lo == hi {
		if n > 0 {
			loV = b.Reduce(x, b.Scalar(acc, hlo.Highest(acc)), hlo.ReduceMin, 0)
			hiV = b.Reduce(x, b.Scalar(acc, hlo.Lowest(acc)), hlo.ReduceMax, 0)
			// CPU reads the data's range and refuses one that is not finite (an inf or NaN element).
			both := b.Concatenate(0, b.Reshape(b.Convert(loV, hlo.F64), 1), b.Reshape(b.Convert(hiV, hlo.F64), 1))
			bitsOf, err := c.R.Int64Values(b.BitcastConvert(both, hlo.S64))
			if err != nil {
				return nil, err
			}
			l, h := math.Float64frombits(uint64(bitsOf[0])), math.Float64frombits(uint64(bitsOf[1]))
			if math.IsInf(l, 0) || math.IsInf(h, 0) || math.IsNaN(l) || math.IsNaN(h) {
				return nil, notFinite(l, h)
			}
		}
		same := b.Compare(hlo.EQ, loV, hiV)
		loV = b.Select(same, b.Sub(loV, b.Scalar(acc, 1)), loV)
		hiV = b.Select(same, b.Add(hiV, b.Scalar(acc, 1)), hiV)
	}
	bc := func(v *hlo.Value) *hlo.Value { return b.BroadcastTo(v, []int64{n}) }
	pos := b.Div(b.Mul(b.Sub(x, bc(loV)), bc(b.Scalar(acc, float64(bins)))), bc(b.Sub(hiV, loV)))
	idx := b.Convert(b.Floor(pos), hlo.S64)
	idx = b.Select(b.Compare(hlo.EQ, x, bc(hiV)), bc(b.ConstantInt(hlo.T(hlo.S64), bins-1)), idx)
	inside := b.And(b.Compare(hlo.GE, x, bc(loV)), b.Compare(hlo.LE, x, bc(hiV)))
	idx = b.Select(inside, idx, bc(b.ConstantInt(hlo.T(hlo.S64), -1)))
	return []*hlo.Value{b.Convert(binCounts(b, idx, bins, acc), m.DType.Elem())}, nil
}

// histcInt is histc of an integer tensor, which CPU refuses and CUDA counts
// (HuggingFace's mixture-of-experts layers count tokens per expert so on every
// device but CPU and MPS): the bounds are converted to the input's type, an
// element's bin is (x - min) * bins / (max - min) in integer arithmetic, max
// falls in the last bin, and the counts have the input's type.
func histcInt(c *Ctx, m TensorMeta, bins int64, lo, hi float64) ([]*hlo.Value, error) {
	b := c.B
	n := m.Numel()
	l, h := int64(lo), int64(hi)
	x := b.Reshape(b.Convert(c.T(0), hlo.S64), n)
	loV, hiV := c.R.IntNumber(l, hlo.S64), c.R.IntNumber(h, hlo.S64)
	if l == h && n > 0 {
		loV = b.Reduce(x, b.Scalar(hlo.S64, hlo.Highest(hlo.S64)), hlo.ReduceMin, 0)
		hiV = b.Reduce(x, b.Scalar(hlo.S64, hlo.Lowest(hlo.S64)), hlo.ReduceMax, 0)
	}
	if l == h {
		same := b.Compare(hlo.EQ, loV, hiV)
		loV = b.Select(same, b.Sub(loV, b.Scalar(hlo.S64, 1)), loV)
		hiV = b.Select(same, b.Add(hiV, b.Scalar(hlo.S64, 1)), hiV)
	}
	bc := func(v *hlo.Value) *hlo.Value { return b.BroadcastTo(v, []int64{n}) }
	nb := bc(b.ConstantInt(hlo.T(hlo.S64), bins))
	idx := b.Div(b.Mul(b.Sub(x, bc(loV)), nb), bc(b.Sub(hiV, loV)))
	idx = b.Select(b.Compare(hlo.EQ, idx, nb), b.Sub(nb, bc(b.Scalar(hlo.S64, 1))), idx)
	inside := b.And(b.Compare(hlo.GE, x, bc(loV)), b.Compare(hlo.LE, x, bc(hiV)))
	idx = b.Select(inside, idx, bc(b.ConstantInt(hlo.T(hlo.S64), -1)))
	return []*hlo.Value{b.Convert(binCounts(b, idx, bins, hlo.S64), m.DType.Elem())}, nil
}

// binCounts counts, in element type e, how many of the s64 bin indices idx
// (of rank 1; -1 for none) fall in each of bins bins.
func binCounts(b *hlo.Builder, idx *hlo.Value, bins int64, e hlo.Elem) *hlo.Value {
	n := idx.T.Shape[0]
	hit := b.Compare(hlo.EQ, b.BroadcastInDim(idx, []int64{n, bins}, []int64{0}), b.Iota(hlo.T(hlo.S64, n, bins), 1))
	return b.Reduce(b.Convert(hit, e), b.Scalar(e, 0), hlo.ReduceSum, 0)
}

// bincount is bincount(self, weights, minlength): how often each value of
// the 1-D non-negative integer tensor self occurs (or the sum of its
// weights). The output length depends on the data, so self is read to the
// host first.
func bincount(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if !m.DType.IsIntegral(false) {
		return nil, notImplemented("bincount_cpu", m.DType) // CPU's kernel dispatches on integer types first
	}
	if m.Rank() != 1 {
		return nil, Errorf("bincount only supports 1-d non-negative integral inputs.")
	}
	minlength := c.Int(2, 0)
	if minlength < 0 {
		return nil, Errorf("minlength should be >= 0")
	}
	hasW := c.Has(1)
	if hasW && !slices.Equal(c.Meta(1).Sizes, m.Sizes) {
		return nil, Errorf("weights should be 1-d and have the same length as input")
	}
	vals, err := c.R.Int64s(c.Args[0].Handles[0])
	if err != nil {
		return nil, err
	}
	n := minlength
	for _, v := range vals {
		if v < 0 {
			return nil, Errorf("bincount only supports 1-d non-negative integral inputs.")
		}
		n = max(n, v+1)
	}
	b := c.B
	out := Int64
	if hasW {
		out = Float64
		if c.Meta(1).DType == Float32 {
			out = Float32
		}
	}
	k := m.Sizes[0]
	if k == 0 || n == 0 {
		return []*hlo.Value{full(b, out, []int64{n}, 0)}, nil
	}
	x := b.Convert(c.T(0), hlo.S64)
	hit := b.Compare(hlo.EQ, b.BroadcastInDim(x, []int64{k, n}, []int64{0}), b.Iota(hlo.T(hlo.S64, k, n), 1))
	var w *hlo.Value
	if hasW {
		w = b.BroadcastInDim(b.Convert(c.T(1), out.Elem()), []int64{k, n}, []int64{0})
	} else {
		w = full(b, out, []int64{k, n}, 1)
	}
	terms := b.Select(hit, w, full(b, out, []int64{k, n}, 0))
	return []*hlo.Value{b.Reduce(terms, b.Scalar(out.Elem(), 0), hlo.ReduceSum, 0)}, nil
}

func init() {
	def("aten::histogram.bin_ct", histogramBinCt, "aten::histogram.bin_ct_out")
	def("aten::histogram.bins_tensor", histogramBinsTensor, "aten::histogram.bins_tensor_out")
	def("aten::_histogramdd_bin_edges", histogramddBinEdges)
	def("aten::_histogramdd_from_bin_cts", histogramddFromBinCts)
	def("aten::_histogramdd_from_bin_tensors", histogramddFromBinTensors)
	def("aten::histc", histc).Needs = readsResults
	def("aten::bincount", bincount).Needs = hostArgs(0)
}
