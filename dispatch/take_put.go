package dispatch

import "torchtpu/hlo"

// flatIndex reads index argument i (int64), checks it against n elements,
// and returns it with negative entries wrapped, in the graph.
func (c *Ctx) flatIndex(op string, i int, n int64) (*hlo.Value, error) {
	im := c.Meta(i)
	if im.DType != Int64 {
		return nil, Errorf("%s(): Expected a long tensor for index, but got %s", op, scalarTypeName(im.DType))
	}
	var vs []int64
	var err error
	if !c.NoHostChecks {
		vs, err = c.R.Int64s(c.Args[i].Handles[0])
	}
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		if v < -n || v >= n {
			return nil, IndexErrorf("out of range: tried to access index %d on a tensor of %d elements.", v, n)
		}
	}
	b := c.B
	idx := b.Reshape(c.T(i), im.Numel())
	zero := full(b, Int64, []int64{im.Numel()}, 0)
	wrapped := b.Add(idx, full(b, Int64, []int64{im.Numel()}, float64(n)))
	return b.Select(b.Compare(hlo.LT, idx, zero), wrapped, idx), nil
}

// takeRule is take(self, index): self read as a flat array at index.
func takeRule(c *Ctx) ([]*hlo.Value, error) {
	m, im := c.Meta(0), c.Meta(1)
	if im.Numel() > 0 && m.Numel() == 0 {
		return nil, Errorf("take(): tried to take from an empty tensor")
	}
	idx, err := c.flatIndex("take", 1, m.Numel())
	if err != nil {
		return nil, err
	}
	if im.Numel() == 0 {
		return []*hlo.Value{full(c.B, m.DType, im.Sizes, 0)}, nil
	}
	b := c.B
	g := b.GatherFlat(b.Reshape(c.T(0), m.Numel()), idx)
	return []*hlo.Value{b.Reshape(g, im.Sizes...)}, nil
}

// putRule is put(self, index, source, accumulate): source written (or added)
// into self read as a flat array at index.
func putRule(c *Ctx) ([]*hlo.Value, error) {
	m, im, sm := c.Meta(0), c.Meta(1), c.Meta(2)
	if sm.DType != m.DType {
		return nil, Errorf("put_(): self and source expected to have the same dtype, but got self.dtype = %s and source.dtype = %s", m.DType, sm.DType)
	}
	if sm.Numel() != im.Numel() {
		return nil, Errorf("put_(): Expected source and index to have the same number of elements, but got source.numel() = %d, index.numel() = %d",
			sm.Numel(), im.Numel())
	}
	if im.Numel() > 0 && m.Numel() == 0 {
		return nil, Errorf("put_(): Tried to put elements into an empty tensor")
	}
	idx, err := c.flatIndex("put_", 1, m.Numel())
	if err != nil {
		return nil, err
	}
	if im.Numel() == 0 {
		return []*hlo.Value{c.T(0)}, nil
	}
	b := c.B
	var combine combineFn
	if c.Bool(3, false) {
		combine = addCombine
	}
	r := b.ScatterFlat(b.Reshape(c.T(0), m.Numel()), idx, b.Reshape(c.T(2), sm.Numel()), combine)
	return []*hlo.Value{b.Reshape(r, m.Sizes...)}, nil
}

func init() {
	tk := def("aten::take", takeRule)
	tk.Needs, tk.OutNoOverlap = hostArgs(1), true
	def("aten::put", putRule).Needs = hostArgs(1)
}
