package dispatch

import (
	"fmt"
	"math"

	"torchtpu/hlo"
)

// fillScalar is fill.Scalar(self, value): self's shape and dtype filled with value.
func fillScalar(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	// CPU fills a one-element tensor through scalar_fill, whose half-type conversion is unchecked (where(c, x, 1e10)
	// on float16 makes its bound so, giving inf); larger tensors check.
	unchecked := m.Numel() == 1 && (m.DType == Float16 || m.DType == BFloat16)
	if err := checkScalarFits(c.Args[1], m.DType); err != nil && !unchecked {
		return nil, err
	}
	v := c.Value(1, m.DType)
	if c.IsTensor(1) && c.Meta(1).Rank() != 0 {
		return nil, Errorf("fill_ only supports 0-dimension value tensor but got tensor with %d dimensions", c.Meta(1).Rank())
	}
	return []*hlo.Value{c.B.BroadcastTo(v, m.Sizes)}, nil
}

// zero is zero(self): zeros of self's shape and dtype.
func zero(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	return []*hlo.Value{full(c.B, m.DType, m.Sizes, 0)}, nil
}

// ArangeLength returns the element count of arange(start, end, step), or an error.
func ArangeLength(start, end, step float64) (int64, error) {
	if math.IsNaN(step) || math.IsInf(step, 0) {
		return 0, Errorf("step must be finite but got %s", cDouble(step))
	}
	if step == 0 {
		return 0, Errorf("step must be nonzero")
	}
	if math.IsNaN(start) || math.IsNaN(end) || math.IsInf(start, 0) || math.IsInf(end, 0) {
		return 0, Errorf("unsupported range: %s -> %s", cDouble(start), cDouble(end))
	}
	if (step > 0 && end < start) || (step < 0 && end > start) {
		return 0, Errorf("upper bound and lower bound inconsistent with step sign")
	}
	n := math.Ceil((end - start) / step)
	if !(n >= 0 && n <= math.MaxInt64) {
		return 0, Errorf("invalid size, possible overflow?")
	}
	return int64(n), nil
}

// arangeIntLength is ArangeLength for an int64 result whose start, end and step
// are all Python integers: as on CPU, the count comes from integer arithmetic,
// exact where float64 is not (arange(2**62 + 1, 2**62 + 10, 3) has 3 elements).
func arangeIntLength(start, end, step int64) (int64, error) {
	if step == 0 {
		return 0, Errorf("step must be nonzero")
	}
	if (step > 0 && end < start) || (step < 0 && end > start) {
		return 0, Errorf("upper bound and lower bound inconsistent with step sign")
	}
	sgn := int64(1)
	if step < 0 {
		sgn = -1
	}
	n := (end - start + step - sgn) / step // wraps past int64 as CPU's does, to a negative count
	if n < 0 {
		return 0, Errorf("invalid size, possible overflow?")
	}
	return n, nil
}

// integral reports whether a is a Python integer (not a bool), which Scalar.isIntegral(false) accepts.
func integral(a Arg) bool { return a.Kind == ArgScalarInt || a.Kind == ArgInt }

// arangeOut is arange.start_out(start, end, step, *, out): the out tensor's
// dtype decides the result's. As PyTorch's CPU kernel does, an integer result
// is start + i*step in int64 with start and step truncated to integers (so
// arange(0.5, 5, 1.5) of int64 is 0, 1, 2; its length still comes from the
// float values), and a float result is computed in CPU's accumulate type
// (float64 for float32 and float64, float32 for the half types) and rounded
// once: arange(-1.5, 2.7, 0.3)[5] is -5.6e-17, not 6e-8.
func arangeOut(c *Ctx) ([]*hlo.Value, error) {
	start, end, step := c.Float(0, 0), c.Float(1, 0), c.Float(2, 1)
	d := c.Meta(3).DType
	exact := d == Int64 && integral(c.Args[0]) && integral(c.Args[1]) && (!c.Has(2) || integral(c.Args[2]))
	var n int64
	var err error
	if exact {
		n, err = arangeIntLength(c.Int(0, 0), c.Int(1, 0), c.Int(2, 1))
	} else {
		n, err = ArangeLength(start, end, step)
	}
	if err != nil {
		return nil, err
	}
	b := c.B
	i := b.Iota(hlo.T(hlo.S64, n), 0)
	if !d.IsFloat() {
		first, by := int64(start), int64(step)
		if integral(c.Args[0]) {
			first = c.Int(0, 0)
		}
		if c.Has(2) && integral(c.Args[2]) {
			by = c.Int(2, 1)
		}
		if (d == Int64 || d == Int32) && n > 0 {
			last := first + (n-1)*by
			c.KnowRange(0, min(first, last), max(first, last))
		}
		if capacity, ok := c.growingCapacity(fmt.Sprint("arange ", first, " ", by, " ", d), n); ok {
			return []*hlo.Value{arangePadded(c, first, by, n, capacity, d)}, nil
		}
		sv := b.BroadcastTo(c.R.IntNumber(first, hlo.S64), []int64{n})
		st := b.BroadcastTo(c.R.IntNumber(by, hlo.S64), []int64{n})
		return []*hlo.Value{b.Convert(b.Add(sv, b.Mul(i, st)), d.Elem())}, nil
	}
	acc := Float32
	if d == Float64 || d == Float32 {
		acc = Float64
	}
	fi := b.Convert(i, acc.Elem())
	sv := b.BroadcastTo(c.R.Scalar(start, acc.Elem()), []int64{n})
	st := b.BroadcastTo(c.R.Scalar(step, acc.Elem()), []int64{n})
	return []*hlo.Value{b.Convert(b.Add(sv, b.Mul(fi, st)), d.Elem())}, nil
}

// arangePadded is an integer arange of n elements held padded to capacity
// (padded.go), for an arange one longer than one of its start, step and
// dtype lately, of a growing tensor's size: a decoding loop's key positions
// compile once per capacity.
func arangePadded(c *Ctx, first, by, n, capacity int64, d DType) *hlo.Value {
	b := c.B
	shape := []int64{capacity}
	i := b.Iota(hlo.T(hlo.S64, capacity), 0)
	v := b.Add(b.BroadcastTo(c.R.IntNumber(first, hlo.S64), shape), b.Mul(i, b.BroadcastTo(c.R.IntNumber(by, hlo.S64), shape)))
	v = b.Select(ValidMask(b, shape, 0, c.R.IntNumber(n, hlo.S64)), v, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 0), shape))
	c.PadResultAt(0, 0, n)
	return b.Convert(v, d.Elem())
}

// eyeOut is eye.m_out(n, m, *, out) and eye.out(n, *, out): ones on the
// diagonal of an n x m matrix of out's dtype.
func eyeOut(square bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		n := c.Int(0, 0)
		m, outArg := n, 1
		if !square {
			m, outArg = c.Int(1, 0), 2
		}
		if n < 0 {
			return nil, Errorf("n must be greater or equal to 0, got %d", n)
		}
		if m < 0 {
			return nil, Errorf("m must be greater or equal to 0, got %d", m)
		}
		d := c.Meta(outArg).DType
		b := c.B
		t := hlo.T(hlo.S64, n, m)
		diag := b.Compare(hlo.EQ, b.Iota(t, 0), b.Iota(t, 1))
		return []*hlo.Value{convertTo(b, b.Convert(diag, hlo.U8), Uint8, d)}, nil
	}
}

func init() {
	alias("aten::eye.m_out", &Rule{Name: "aten::eye.m_out", Fn: eyeOut(false)}, OutVariant)
	alias("aten::eye.out", &Rule{Name: "aten::eye.out", Fn: eyeOut(true)}, OutVariant)
	fill := def("aten::fill.Scalar", fillScalar, "")
	fill.ComplexScalar, fill.Range = 1, fillRange
	def("aten::fill.Tensor", fillScalar, "").Range = fillRange
	def("aten::zero", zero, "").Range = zeroRange
	alias("aten::arange.start_out", &Rule{Name: "aten::arange.start_out", Fn: arangeOut, OutKeepsShape: true,
		Needs: Needs{Grows: true}}, OutVariant)
}
