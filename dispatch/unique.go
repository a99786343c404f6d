package dispatch

import (
	"math"
	"sort"

	"torchtpu/hlo"
)

// hostNumbers reads a value of any dtype to the host exactly: floats travel
// as the bits of their float64 value, integers and bools as int64.
func (c *Ctx) hostNumbers(v *hlo.Value, d DType) ([]float64, []int64, error) {
	b := c.B
	if d.IsFloat() {
		bits, err := c.R.Int64Values(b.BitcastConvert(b.Convert(v, hlo.F64), hlo.S64))
		if err != nil {
			return nil, nil, err
		}
		fs := make([]float64, len(bits))
		for i, x := range bits {
			fs[i] = math.Float64frombits(uint64(x))
		}
		return fs, nil, nil
	}
	if d == UInt64 {
		// The bits travel unchanged: values past the int64 range must not saturate or wrap by conversion.
		v = b.BitcastConvert(v, hlo.S64)
	}
	ints, err := c.R.Int64Values(b.Convert(v, hlo.S64))
	return nil, ints, err
}

// upload returns host numbers as a runtime input of dtype d and the given shape.
func (c *Ctx) upload(fs []float64, ints []int64, d DType, shape []int64) *hlo.Value {
	b := c.B
	if numel(shape) == 0 {
		return full(b, d, shape, 0)
	}
	if d.IsFloat() {
		bits := make([]int64, len(fs))
		for i, f := range fs {
			bits[i] = int64(math.Float64bits(f))
		}
		return b.Convert(b.BitcastConvert(c.R.Int64Tensor(bits, shape), hlo.F64), d.Elem())
	}
	v := c.R.Int64Tensor(ints, shape)
	if d == Bool {
		return b.Compare(hlo.NE, v, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 0), shape))
	}
	if d == UInt64 {
		return b.BitcastConvert(v, hlo.U64)
	}
	return b.Convert(v, d.Elem())
}

// unique2 is _unique2(self, sorted, return_inverse, return_counts): the
// distinct values in ascending order, computed on the host after a sync.
// Inverse indices and counts are empty when not requested, as on CPU.
func unique2(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	fs, ints, err := c.hostNumbers(c.T(0), m.DType)
	if err != nil {
		return nil, err
	}
	n := int(m.Numel())
	key := func(i int) float64 {
		if fs != nil {
			return fs[i]
		}
		return float64(ints[i])
	}
	// NaNs sort last, in their order, and each is a distinct value, as on CPU.
	isNaN := func(i int) bool { return fs != nil && fs[i] != fs[i] }
	less := func(i, j int) bool {
		if fs != nil {
			return !isNaN(i) && (isNaN(j) || fs[i] < fs[j])
		}
		if m.DType == UInt64 {
			return uint64(ints[i]) < uint64(ints[j])
		}
		return ints[i] < ints[j]
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return less(order[a], order[b]) })
	inverse := make([]int64, n)
	var uf []float64
	var ui, counts []int64
	for k, i := range order {
		if k == 0 || isNaN(i) || less(order[k-1], i) {
			if fs != nil {
				uf = append(uf, key(i))
			} else {
				ui = append(ui, ints[i])
			}
			counts = append(counts, 0)
		}
		inverse[i] = int64(len(counts) - 1)
		counts[len(counts)-1]++
	}
	u := len(counts)
	out := []*hlo.Value{c.upload(uf, ui, m.DType, []int64{int64(u)})}
	if c.Bool(2, false) {
		out = append(out, c.upload(nil, inverse, Int64, m.Sizes))
	} else {
		out = append(out, full(c.B, Int64, []int64{0}, 0))
	}
	if c.Bool(3, false) {
		out = append(out, c.upload(nil, counts, Int64, []int64{int64(u)}))
	} else {
		out = append(out, full(c.B, Int64, []int64{0}, 0))
	}
	return out, nil
}

// unique1 is _unique(self, sorted, return_inverse): _unique2 without counts.
func unique1(c *Ctx) ([]*hlo.Value, error) {
	out, err := unique2(c)
	if err != nil {
		return nil, err
	}
	return out[:2], nil
}

func init() {
	def("aten::_unique2", unique2).Needs = Needs{Results: true, Uploads: true}
	def("aten::_unique", unique1).Needs = Needs{Results: true, Uploads: true}
}
