package dispatch

import "torchtpu/hlo"

// nonzeroStatic is nonzero_static(self, *, size, fill_value): the first size
// rows of nonzero(self), padded with rows of fill_value. Like nonzero it reads
// the mask on the host after a sync; the result's shape does not depend on it.
func nonzeroStatic(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	size := c.Int(1, 0)
	fill := c.Int(2, -1)
	if size < 0 {
		return nil, Errorf("nonzero_static: 'size' must be an non-negative integer")
	}
	rank := int64(m.Rank())
	shape := []int64{size, rank}
	if size == 0 {
		return []*hlo.Value{full(c.B, Int64, shape, 0)}, nil
	}
	coords, rows, err := nonzeroCoords(c, size)
	if err != nil {
		return nil, err
	}
	for ; rows < size; rows++ {
		for j := int64(0); j < rank; j++ {
			coords = append(coords, fill)
		}
	}
	if rank == 0 {
		return []*hlo.Value{full(c.B, Int64, shape, 0)}, nil
	}
	return []*hlo.Value{c.R.Int64Tensor(coords, shape)}, nil
}

func init() {
	def("aten::nonzero_static", nonzeroStatic).Needs = Needs{HostArgs: []int{0}, Results: true, Uploads: true}
}
