package dispatch

import (
	"torchtpu/hlo"
)

// uniqueConsecutive is unique_consecutive(self, return_inverse,
// return_counts, dim): collapses runs of equal consecutive elements (or
// slices along dim), computed on the host after a sync. Inverse indices and
// counts are empty when not requested, as on CPU.
func uniqueConsecutive(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	b := c.B
	x := c.T(0)
	shape := []int64{m.Numel()}
	dim := int64(-1)
	if c.Has(3) {
		var err error
		if dim, err = wrapDim(c.Int(3, 0), m.Rank()); err != nil {
			return nil, err
		}
		if m.Rank() == 0 {
			dim = -1
		}
	}
	var perm []int64
	if dim >= 0 {
		perm = append([]int64{dim}, keptMapping(m.Rank(), []int64{dim})...)
		x = b.Transpose(x, perm...)
		shape = x.T.Shape
		if shape[0] == 0 && m.Numel() == 0 && numel(shape[1:]) != 0 {
			return nil, Errorf("Number of zero sized dimensions is more than one, so unique cannot be applied ")
		}
	}
	fs, ints, err := c.hostNumbers(x, m.DType)
	if err != nil {
		return nil, err
	}
	b = c.B // the read synced the graph; later ops go to the new builder
	rows := shape[0]
	width := int64(1)
	if rows > 0 {
		width = numel(shape) / rows
	}
	same := func(i, j int64) bool {
		for k := int64(0); k < width; k++ {
			if fs != nil && fs[i*width+k] != fs[j*width+k] {
				return false
			}
			if fs == nil && ints[i*width+k] != ints[j*width+k] {
				return false
			}
		}
		return true
	}
	inverse := make([]int64, rows)
	var keepF []float64
	var keepI, counts []int64
	for i := int64(0); i < rows; i++ {
		if i == 0 || !same(i-1, i) {
			if fs != nil {
				keepF = append(keepF, fs[i*width:(i+1)*width]...)
			} else {
				keepI = append(keepI, ints[i*width:(i+1)*width]...)
			}
			counts = append(counts, 0)
		}
		inverse[i] = int64(len(counts) - 1)
		counts[len(counts)-1]++
	}
	u := int64(len(counts))
	outShape := append([]int64{u}, shape[1:]...)
	vals := c.upload(keepF, keepI, m.DType, outShape)
	if dim >= 0 {
		inv := make([]int64, len(perm))
		for i, p := range perm {
			inv[p] = int64(i)
		}
		vals = b.Transpose(vals, inv...)
	}
	out := []*hlo.Value{vals}
	invShape := m.Sizes
	if dim >= 0 {
		invShape = []int64{rows}
	}
	if c.Bool(1, false) {
		out = append(out, c.upload(nil, inverse, Int64, invShape))
	} else {
		out = append(out, full(b, Int64, []int64{0}, 0))
	}
	if c.Bool(2, false) {
		out = append(out, c.upload(nil, counts, Int64, []int64{u}))
	} else {
		out = append(out, full(b, Int64, []int64{0}, 0))
	}
	return out, nil
}

func init() {
	def("aten::unique_consecutive", uniqueConsecutive).Needs = Needs{Results: true, Uploads: true}
}
