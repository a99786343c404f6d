package dispatch

import "torchtpu/hlo"

// foreachLen returns the length of the first tensor-list argument and checks
// that every other tensor-list argument has as many tensors.
func foreachLen(c *Ctx) (int, error) {
	n := -1
	for _, a := range c.Args {
		if a.Kind != ArgTensorList {
			continue
		}
		if n < 0 {
			n = len(a.Handles)
		} else if len(a.Handles) != n {
			return 0, Errorf("Tensor lists must have the same number of tensors, got %d and %d", n, len(a.Handles))
		}
	}
	if n < 0 {
		return 0, Errorf("expected a tensor list")
	}
	return n, nil
}

// elementArgs returns c's arguments for element i of the tensor lists: each
// tensor list becomes its i-th tensor and each scalar list its i-th number.
func elementArgs(c *Ctx, i int) ([]Arg, error) {
	sub := make([]Arg, len(c.Args))
	for k, a := range c.Args {
		switch a.Kind {
		case ArgTensorList:
			sub[k] = Arg{Kind: ArgTensor, Tensors: a.Tensors[i : i+1], Handles: a.Handles[i : i+1]}
		case ArgDoubleList:
			if i >= len(a.Doubles) {
				return nil, Errorf("Tensor list must have same number of elements as scalar list.")
			}
			sub[k] = Arg{Kind: ArgScalarDouble, Double: a.Doubles[i]}
		default:
			sub[k] = a
		}
	}
	return sub, nil
}

// foreachOf builds a _foreach_ rule that applies the single-tensor rule
// named single to each element of the tensor lists; result i is the first
// result of element i. In-place variants write result i into self[i].
func foreachOf(single string) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		e, ok := Lookup(single)
		if !ok {
			return nil, Errorf("no rule for %s", single)
		}
		n, err := foreachLen(c)
		if err != nil {
			return nil, err
		}
		out := make([]*hlo.Value, n)
		for i := 0; i < n; i++ {
			sub, err := elementArgs(c, i)
			if err != nil {
				return nil, err
			}
			rs, err := e.Rule.Fn(&Ctx{Op: single, B: c.B, Args: sub, R: c.R})
			if err != nil {
				return nil, err
			}
			out[i] = rs[0]
		}
		return out, nil
	}
}

// foreachTensorScalars builds _foreach_addcmul.Tensor and addcdiv.Tensor,
// whose scalars argument (3) is a 1-D tensor with one value per element.
func foreachTensorScalars(div bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		n, err := foreachLen(c)
		if err != nil {
			return nil, err
		}
		sm := c.Meta(3)
		if sm.Rank() != 1 || sm.Sizes[0] != int64(n) {
			return nil, Errorf("Expected length of scalars to match input of length %d but got %d instead.", n, sm.Numel())
		}
		b := c.B
		s := c.T(3)
		out := make([]*hlo.Value, n)
		for i := 0; i < n; i++ {
			sub, err := elementArgs(c, i)
			if err != nil {
				return nil, err
			}
			v := b.Reshape(b.Slice(s, []int64{int64(i)}, []int64{int64(i) + 1}, []int64{1}))
			if out[i], err = addcCore(&Ctx{Op: c.Op, B: b, Args: sub, R: c.R}, div, 3, v); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}

// foreachZero is _foreach_zero(self): zeros like each tensor.
func foreachZero(c *Ctx) ([]*hlo.Value, error) {
	a := c.Args[0]
	out := make([]*hlo.Value, len(a.Tensors))
	for i, m := range a.Tensors {
		out[i] = full(c.B, m.DType, m.Sizes, 0)
	}
	return out, nil
}

// foreachCopy is _foreach_copy(self, src, non_blocking): src[i] cast to
// self[i]'s dtype and broadcast to its shape.
func foreachCopy(c *Ctx) ([]*hlo.Value, error) {
	n, err := foreachLen(c)
	if err != nil {
		return nil, err
	}
	dst, src := c.Args[0], c.Args[1]
	out := make([]*hlo.Value, n)
	for i := 0; i < n; i++ {
		m := dst.Tensors[i]
		if _, err := BroadcastShapes(m.Sizes, src.Tensors[i].Sizes); err != nil {
			return nil, err
		}
		v := c.B.Convert(c.R.Read(src.Handles[i]), m.DType.Elem())
		out[i] = c.B.BroadcastTo(v, m.Sizes)
	}
	return out, nil
}

// foreachNorm is _foreach_norm.Scalar(self, ord, dtype): linalg_vector_norm
// of each tensor over all its dims.
func foreachNorm(c *Ctx) ([]*hlo.Value, error) {
	a := c.Args[0]
	out := make([]*hlo.Value, len(a.Handles))
	for i := range a.Handles {
		sub := []Arg{{Kind: ArgTensor, Tensors: a.Tensors[i : i+1], Handles: a.Handles[i : i+1]}, c.Args[1], {Kind: ArgNone}, {Kind: ArgBool}}
		if c.Has(2) {
			sub = append(sub, c.Args[2])
		}
		rs, err := vectorNorm(&Ctx{Op: "aten::linalg_vector_norm", B: c.B, Args: sub, R: c.R})
		if err != nil {
			return nil, err
		}
		out[i] = rs[0]
	}
	return out, nil
}

func init() {
	for _, op := range []string{"add", "sub"} {
		single := "aten::" + op + ".Tensor"
		for _, ov := range []string{"Scalar", "List", "ScalarList", "Tensor"} {
			if op == "sub" && ov == "Tensor" {
				continue
			}
			def("aten::_foreach_"+op+"."+ov, foreachOf(single), "")
		}
	}
	for _, op := range []string{"mul", "div"} {
		single := "aten::" + op + ".Tensor"
		for _, ov := range []string{"Scalar", "List", "ScalarList", "Tensor"} {
			def("aten::_foreach_"+op+"."+ov, foreachOf(single), "")
		}
	}
	for _, op := range []string{"addcmul", "addcdiv"} {
		def("aten::_foreach_"+op+".Scalar", foreachOf("aten::"+op), "")
		def("aten::_foreach_"+op+".ScalarList", foreachOf("aten::"+op), "")
		def("aten::_foreach_"+op+".Tensor", foreachTensorScalars(op == "addcdiv"), "")
	}
	def("aten::_foreach_lerp.Scalar", foreachOf("aten::lerp.Scalar"), "")
	def("aten::_foreach_lerp.ScalarList", foreachOf("aten::lerp.Scalar"), "")
	def("aten::_foreach_lerp.List", foreachOf("aten::lerp.Tensor"), "")
	for _, op := range []string{"neg", "sqrt", "abs", "exp", "log", "sign", "reciprocal", "rsqrt", "sigmoid", "tanh"} {
		def("aten::_foreach_"+op, foreachOf("aten::"+op), "")
	}
	def("aten::_foreach_maximum.List", foreachOf("aten::maximum"), "")
	def("aten::_foreach_minimum.List", foreachOf("aten::minimum"), "")
	def("aten::_foreach_maximum.Scalar", foreachOf("aten::clamp_min"), "")
	def("aten::_foreach_maximum.ScalarList", foreachOf("aten::clamp_min"), "")
	def("aten::_foreach_minimum.Scalar", foreachOf("aten::clamp_max"), "")
	def("aten::_foreach_minimum.ScalarList", foreachOf("aten::clamp_max"), "")
	def("aten::_foreach_clamp_min.Scalar", foreachOf("aten::clamp_min"), "")
	def("aten::_foreach_clamp_min.ScalarList", foreachOf("aten::clamp_min"), "")
	def("aten::_foreach_clamp_min.List", foreachOf("aten::clamp_min.Tensor"), "")
	def("aten::_foreach_clamp_max.Scalar", foreachOf("aten::clamp_max"), "")
	def("aten::_foreach_clamp_max.ScalarList", foreachOf("aten::clamp_max"), "")
	def("aten::_foreach_clamp_max.List", foreachOf("aten::clamp_max.Tensor"), "")
	def("aten::_foreach_pow.Scalar", foreachOf("aten::pow.Tensor_Scalar"), "")
	def("aten::_foreach_pow.ScalarList", foreachOf("aten::pow.Tensor_Scalar"), "")
	def("aten::_foreach_pow.List", foreachOf("aten::pow.Tensor_Tensor"), "")
	alias("aten::_foreach_pow.ScalarAndTensor", &Rule{Name: "aten::_foreach_pow.ScalarAndTensor", Fn: foreachOf("aten::pow.Scalar")}, Functional)
	def("aten::_foreach_norm.Scalar", foreachNorm, "")
	def("aten::_foreach_zero", foreachZero, "")
	def("aten::_foreach_copy", foreachCopy, "")
}
