package dispatch

import (
	"fmt"

	"torchtpu/hlo"
)

// padIndex returns, for one padded dimension of size n with lo/hi padding,
// the source coordinate of every output position: reflected about the edges
// (reflect) or clamped to them (replicate). Negative padding crops.
func padIndex(b *hlo.Builder, n, lo, hi int64, reflect bool) *hlo.Value {
	m := n + lo + hi
	t := hlo.T(hlo.S64, m)
	i := b.Sub(b.Iota(t, 0), b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), lo), []int64{m}))
	last := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), n-1), []int64{m})
	if reflect {
		j := b.Abs(i)
		return b.Sub(last, b.Abs(b.Sub(last, j)))
	}
	zero := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 0), []int64{m})
	return b.Clamp(zero, i, last)
}

// gatherDim selects the slices idx (rank 1, int64) of x along dim.
func gatherDim(b *hlo.Builder, x, idx *hlo.Value, dim int64) *hlo.Value {
	n := idx.T.Shape[0]
	out := append([]int64{}, x.T.Shape...)
	out[dim] = n
	slice := append([]int64{}, x.T.Shape...)
	slice[dim] = 1
	return b.Gather(x, b.Reshape(idx, n, 1), hlo.T(x.T.Elem, out...), offsetDimsAround(x.T.Rank(), dim), []int64{dim}, []int64{dim}, 1, slice)
}

// padDims checks a reflection/replication pad of k spatial dims and returns
// the padded dims (last first) with their lo/hi padding.
func padDims(kind string, k int, m TensorMeta, pad []int64, reflect bool) ([]int64, [][2]int64, error) {
	if len(pad) != 2*k {
		return nil, nil, Errorf("padding size is expected to be %d, but got: %d", 2*k, len(pad))
	}
	if m.Rank() != k+1 && m.Rank() != k+2 {
		return nil, nil, Errorf("Expected %dD or %dD (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: %s",
			k+1, k+2, shapeString(m.Sizes))
	}
	for d := 1; d < m.Rank(); d++ {
		if m.Sizes[d] == 0 && !(d == 1 && m.Rank() == k+2) {
			return nil, nil, Errorf("Expected %dD or %dD (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: %s",
				k+1, k+2, shapeString(m.Sizes))
		}
	}
	var dims []int64
	var lohi [][2]int64
	for j := 0; j < k; j++ {
		d := int64(m.Rank() - 1 - j)
		n, lo, hi := m.Sizes[d], pad[2*j], pad[2*j+1]
		if reflect && (lo >= n || hi >= n) {
			return nil, nil, Errorf("Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (%d, %d) at dimension %d of input %s",
				lo, hi, d, shapeString(m.Sizes))
		}
		if n+lo+hi < 1 {
			return nil, nil, Errorf("%s: input is too small: padded size of dimension %d would be %d", kind, d, n+lo+hi)
		}
		dims = append(dims, d)
		lohi = append(lohi, [2]int64{lo, hi})
	}
	return dims, lohi, nil
}

// padRule is reflection_padNd / replication_padNd(self, padding).
func padRule(kind string, k int, reflect bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		dims, lohi, err := padDims(kind, k, m, c.Ints(1, nil), reflect)
		if err != nil {
			return nil, err
		}
		b, x := c.B, c.T(0)
		for j, d := range dims {
			if numel(x.T.Shape) == 0 {
				s := append([]int64{}, x.T.Shape...)
				s[d] += lohi[j][0] + lohi[j][1]
				x = full(b, m.DType, s, 0)
				continue
			}
			x = gatherDim(b, x, padIndex(b, m.Sizes[d], lohi[j][0], lohi[j][1], reflect), d)
		}
		return []*hlo.Value{x}, nil
	}
}

// padBackward is reflection_padNd_backward / replication_padNd_backward(
// grad_output, self, padding): each output gradient is added back to the
// input element it was read from.
func padBackward(kind string, k int, reflect bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		gm, m := c.Meta(0), c.Meta(1)
		dims, lohi, err := padDims(kind, k, m, c.Ints(2, nil), reflect)
		if err != nil {
			return nil, err
		}
		for j, d := range dims {
			if want := m.Sizes[d] + lohi[j][0] + lohi[j][1]; gm.Rank() != m.Rank() || gm.Sizes[d] != want {
				return nil, Errorf("gradOutput width unexpected. Expected: %d, Got: %d", want, gm.Sizes[d])
			}
		}
		b, g := c.B, c.T(0)
		if gm.Numel() == 0 {
			return []*hlo.Value{full(b, m.DType, m.Sizes, 0)}, nil
		}
		for j, d := range dims {
			s := append([]int64{}, g.T.Shape...)
			s[d] = m.Sizes[d]
			idx := padIndex(b, m.Sizes[d], lohi[j][0], lohi[j][1], reflect)
			g = dimScatter(b, idx, d, len(s))(full(b, gm.DType, s, 0), g, addCombine)
		}
		return []*hlo.Value{g}, nil
	}
}

func init() {
	for k := 1; k <= 3; k++ {
		for _, kind := range []string{"reflection", "replication"} {
			name := fmt.Sprintf("%s_pad%dd", kind, k)
			refl := kind == "reflection"
			def("aten::"+name, padRule(name, k, refl), "aten::"+name+".out")
			def("aten::"+name+"_backward", padBackward(name, k, refl), "aten::"+name+"_backward.grad_input")
		}
	}
}
