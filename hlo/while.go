package hlo

// While runs body on the loop-carried values, starting from init, for as long
// as cond holds, and returns their final values. Both functions receive a
// region builder and the carried values; cond returns a scalar boolean and
// body the next carried values, of the same types as init. The regions see
// only the carried values, so anything from outside must be carried.
func (b *Builder) While(init []*Value, cond func(rb *Builder, args []*Value) *Value,
	body func(rb *Builder, args []*Value) []*Value) []*Value {
	if len(init) <= 0 {
		failf("while: no carried values")
	}
	types := make([]Type, len(init))
	for i, v := range init {
		types[i] = v.T
	}
	condBlock := b.block(types, func(rb *Builder, a []*Value) []*Value {
		c := cond(rb, a)
		if !(c.T.Elem == Pred && c.T.Rank() == 0) {
			failf("while: condition must be a scalar bool, got %v", c.T)
		}
		return []*Value{c}
	})
	bodyBlock := b.block(types, func(rb *Builder, a []*Value) []*Value {
		outs := body(rb, a)
		if len(outs) != len(types) {
			failf("while: body returns %d values for %d carried", len(outs), len(types))
		}
		for i, o := range outs {
			if !o.T.Equal(types[i]) {
				failf("while: body value %d is %v, carried as %v", i, o.T, types[i])
			}
		}
		return outs
	})
	return b.opN("stablehlo.while", types, "", "("+condBlock+", "+bodyBlock+")", init...)
}

// ForN runs body n times (n a scalar int64 value of b, computed at run time),
// passing the iteration number i (a scalar int64 counting from 0) and the
// carried values, and returns their final values.
func (b *Builder) ForN(n *Value, init []*Value, body func(rb *Builder, i *Value, args []*Value) []*Value) []*Value {
	if !(n.T.Elem == S64 && n.T.Rank() == 0) {
		failf("for: trip count must be a scalar int64, got %v", n.T)
	}
	carried := append([]*Value{b.ConstantInt(T(S64), 0), n}, init...)
	outs := b.While(carried, func(rb *Builder, a []*Value) *Value {
		return rb.Compare(LT, a[0], a[1])
	}, func(rb *Builder, a []*Value) []*Value {
		next := body(rb, a[0], a[2:])
		one := rb.ConstantInt(T(S64), 1)
		return append([]*Value{rb.Add(a[0], one), a[1]}, next...)
	})
	return outs[2:]
}

// For runs body a fixed number of times; see ForN.
func (b *Builder) For(n int64, init []*Value, body func(rb *Builder, i *Value, args []*Value) []*Value) []*Value {
	return b.ForN(b.ConstantInt(T(S64), n), init, body)
}
