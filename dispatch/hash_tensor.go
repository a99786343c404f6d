package dispatch

import (
	"torchtpu/hlo"
)

// hashTensor is hash_tensor(self, dim, keepdim, mode): with mode 0 (the only
// one) the XOR over dim of each element's 64-bit pattern as uint64, where
// floating elements count as their float64 bits and integers (and bool) as
// their sign-extended int64 value.
func hashTensor(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if mode := c.Int(3, 0); mode != 0 {
		return nil, Errorf("Unknown hash_tensor mode: %d", mode)
	}
	if m.DType.IsComplex() {
		return nil, notImplemented("xor_sum_cpu", m.DType)
	}
	dims, all, err := c.reduceDims(1, m.Rank(), true)
	if err != nil {
		return nil, err
	}
	if all && m.Numel() == 0 {
		return nil, Errorf("hash_tensor: Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.")
	}
	for _, d := range dims {
		if m.Sizes[d] == 0 {
			return nil, IndexErrorf("hash_tensor: Expected reduction dim %d to have non-zero size.", d)
		}
	}
	b := c.B
	x := c.T(0)
	if m.DType.IsFloat() {
		x = b.BitcastConvert(b.Convert(x, hlo.F64), hlo.U64)
	} else {
		x = b.BitcastConvert(b.Convert(x, hlo.S64), hlo.U64)
	}
	r := b.Reduce(x, b.Scalar(hlo.U64, 0), hlo.ReduceXor, dims...)
	return []*hlo.Value{finish(b, r, m.Sizes, dims, c.Bool(2, false))}, nil
}

func init() {
	def("aten::hash_tensor", hashTensor)
}
