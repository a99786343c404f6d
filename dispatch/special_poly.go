package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// polyEnv holds the values every polynomial family's special cases need: x,
// the degree n truncated to int64 (-1 where n is not a finite number) and the
// same degree in x's type.
type polyEnv struct {
	b     *hlo.Builder
	x     *hlo.Value
	n     *hlo.Value
	nf    *hlo.Value
	even  *hlo.Value
	scale int64
}

func (e *polyEnv) k(v float64) *hlo.Value { return splat(e.b, e.x, v) }

// eqK is x == v.
func (e *polyEnv) eqK(v float64) *hlo.Value { return e.b.Compare(hlo.EQ, e.x, e.k(v)) }

// nGT is n > v.
func (e *polyEnv) nGT(v int64) *hlo.Value {
	return e.b.Compare(hlo.GT, e.n, e.b.BroadcastTo(e.b.ConstantInt(hlo.T(hlo.S64), v), e.n.T.Shape))
}

// parity is v where n is even and -v where it is odd.
func (e *polyEnv) parity(v *hlo.Value) *hlo.Value { return e.b.Select(e.even, v, e.b.Neg(v)) }

// twoNPlus1 is 2n + 1 in x's type.
func (e *polyEnv) twoNPlus1() *hlo.Value { return e.b.Add(e.b.Add(e.nf, e.nf), e.k(1)) }

// polyCase is a special case of a polynomial: where when holds, the result is val.
type polyCase struct{ when, val *hlo.Value }

// orthoPoly describes one polynomial family as PyTorch's CPU kernel evaluates
// it: special cases (checked in order after n < 0, which gives 0), then the
// values for n == 0 (1) and n == 1 (q1), then a three-term recurrence that
// runs n - 1 steps from (p, q) = (1, q1).
type orthoPoly struct {
	cases func(e *polyEnv) []polyCase
	q1    func(e *polyEnv) *hlo.Value
	// step computes the next value from k (the step's index j + 1, in x's
	// type), p and q.
	step func(rb *hlo.Builder, x, k, p, q *hlo.Value) *hlo.Value
}

// chebStep is the Chebyshev recurrence r = 2y q - p, with y = x, or 2x - 1 when shifted.
func chebStep(shifted bool) func(rb *hlo.Builder, x, k, p, q *hlo.Value) *hlo.Value {
	return func(rb *hlo.Builder, x, k, p, q *hlo.Value) *hlo.Value {
		y := x
		if shifted {
			y = rb.Sub(rb.Add(x, x), splat(rb, x, 1))
		}
		return rb.Sub(rb.Mul(rb.Add(y, y), q), p)
	}
}

// chebArg is the Chebyshev argument: x, or 2x - 1 for the shifted family.
func chebArg(e *polyEnv, shifted bool) *hlo.Value {
	if shifted {
		return e.b.Sub(e.b.Add(e.x, e.x), e.k(1))
	}
	return e.x
}

// chebyshev builds the Chebyshev family of kind ("t", "u", "v", "w"), shifted
// to [0, 1] or not; for |y| < 1 and large n, CPU evaluates trigonometric
// closed forms, which this follows.
func chebyshev(kind string, shifted bool) orthoPoly {
	return orthoPoly{
		cases: func(e *polyEnv) []polyCase {
			b := e.b
			y := chebArg(e, shifted)
			one := e.k(1)
			// The boundaries: |x| == 1, or x == 1 and x == 0 when shifted.
			var hi, lo *hlo.Value
			if shifted {
				hi, lo = e.eqK(1), e.eqK(0)
			} else {
				abs1 := b.Compare(hlo.EQ, b.Abs(e.x), one)
				pos := b.Compare(hlo.GT, e.x, e.k(0))
				hi, lo = b.And(abs1, pos), b.And(abs1, b.Not(pos))
			}
			np1 := b.Add(e.nf, one)
			var hiV, loV *hlo.Value
			switch kind {
			case "t":
				hiV, loV = one, e.parity(one)
			case "u":
				hiV, loV = np1, e.parity(np1)
			case "v":
				hiV, loV = one, e.parity(e.twoNPlus1())
			case "w":
				hiV, loV = e.twoNPlus1(), e.parity(one)
			}
			minN := int64(8)
			if kind == "t" || shifted {
				minN = 6
			}
			if kind == "w" && shifted {
				minN = 4
			}
			inside := b.And(e.nGT(minN), b.Compare(hlo.LT, b.Abs(y), one))
			acos := precise(b, y, func(v *hlo.Value) *hlo.Value { return b.Chlo("acos", v) })
			half := b.Div(acos, e.k(2))
			nh := b.Add(e.nf, e.k(0.5))
			var closed *hlo.Value
			switch kind {
			case "t":
				closed = pcos(b, b.Mul(e.nf, acos))
			case "u":
				s := psin(b, acos)
				closed = b.Select(b.Compare(hlo.NE, s, e.k(0)), b.Div(psin(b, b.Mul(np1, acos)), s),
					b.Div(b.Mul(np1, pcos(b, b.Mul(np1, acos))), y))
			case "v":
				degenerate := e.parity(e.twoNPlus1())
				closed = b.Select(b.Compare(hlo.NE, psin(b, half), one),
					b.Div(pcos(b, b.Mul(nh, acos)), pcos(b, half)), degenerate)
			case "w":
				degenerate := e.parity(one)
				if !shifted {
					degenerate = b.Select(b.Compare(hlo.GT, e.x, e.k(0)), e.twoNPlus1(), degenerate)
				}
				closed = b.Select(b.Compare(hlo.NE, pcos(b, half), one),
					b.Div(psin(b, b.Mul(nh, acos)), psin(b, half)), degenerate)
			}
			return []polyCase{{hi, hiV}, {lo, loV}, {inside, closed}}
		},
		q1: func(e *polyEnv) *hlo.Value {
			y := chebArg(e, shifted)
			switch kind {
			case "t":
				return y
			case "u":
				return e.b.Add(y, y)
			case "v":
				return e.b.Sub(e.b.Add(y, y), e.k(1))
			}
			return e.b.Add(e.b.Add(y, y), e.k(1))
		},
		step: chebStep(shifted),
	}
}

// hermiteLimit is the largest degree CPU evaluates the Hermite polynomials
// for (NaN beyond).
func hermiteLimit(e *polyEnv) *hlo.Value {
	limit := int64(128)
	if e.x.T.Elem == hlo.F64 {
		limit = 512
	}
	return e.nGT(limit)
}

var polyFamilies = map[string]orthoPoly{
	"hermite_polynomial_h": {
		cases: func(e *polyEnv) []polyCase { return []polyCase{{hermiteLimit(e), e.k(math.NaN())}} },
		q1:    func(e *polyEnv) *hlo.Value { return e.b.Add(e.x, e.x) },
		step: func(rb *hlo.Builder, x, k, p, q *hlo.Value) *hlo.Value {
			return rb.Sub(rb.Mul(rb.Add(x, x), q), rb.Mul(rb.Add(k, k), p))
		},
	},
	"hermite_polynomial_he": {
		cases: func(e *polyEnv) []polyCase { return []polyCase{{hermiteLimit(e), e.k(math.NaN())}} },
		q1:    func(e *polyEnv) *hlo.Value { return e.x },
		step: func(rb *hlo.Builder, x, k, p, q *hlo.Value) *hlo.Value {
			return rb.Sub(rb.Mul(x, q), rb.Mul(k, p))
		},
	},
	"laguerre_polynomial_l": {
		cases: func(e *polyEnv) []polyCase {
			return []polyCase{{e.b.Compare(hlo.EQ, e.b.Abs(e.x), e.k(0)), e.k(1)}}
		},
		q1: func(e *polyEnv) *hlo.Value { return e.b.Sub(e.k(1), e.x) },
		step: func(rb *hlo.Builder, x, k, p, q *hlo.Value) *hlo.Value {
			one := splat(rb, x, 1)
			t := rb.Mul(rb.Add(rb.Add(k, k), rb.Sub(one, x)), q)
			return rb.Div(rb.Sub(t, rb.Mul(k, p)), rb.Add(k, one))
		},
	},
	"legendre_polynomial_p": {
		cases: func(e *polyEnv) []polyCase {
			b := e.b
			abs1 := b.Compare(hlo.EQ, b.Abs(e.x), e.k(1))
			pos := b.Compare(hlo.GT, e.x, e.k(0))
			return []polyCase{{b.And(abs1, pos), e.k(1)}, {b.And(abs1, b.Not(pos)), e.parity(e.k(1))}}
		},
		q1: func(e *polyEnv) *hlo.Value { return e.x },
		step: func(rb *hlo.Builder, x, k, p, q *hlo.Value) *hlo.Value {
			one := splat(rb, x, 1)
			t := rb.Mul(rb.Mul(rb.Add(rb.Add(k, k), one), x), q)
			return rb.Div(rb.Sub(t, rb.Mul(k, p)), rb.Add(k, one))
		},
	},
}

func init() {
	for _, kind := range []string{"t", "u", "v", "w"} {
		polyFamilies["chebyshev_polynomial_"+kind] = chebyshev(kind, false)
		polyFamilies["shifted_chebyshev_polynomial_"+kind] = chebyshev(kind, true)
	}
}

// polyDegree truncates the float degree n toward zero as a C cast does, giving
// -1 (a zero result) where it is NaN, infinite or out of int64's range.
func polyDegree(b *hlo.Builder, n *hlo.Value) *hlo.Value {
	ok := b.And(b.IsFinite(n), b.Compare(hlo.LT, b.Abs(n), splat(b, n, 9.2e18)))
	safe := b.Select(ok, n, splat(b, n, 0))
	i := b.Convert(safe, hlo.S64)
	return b.Select(ok, i, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), -1), n.T.Shape))
}

// evalPoly evaluates family f at x for degrees n (x's type): the special
// cases, then the recurrence as a loop that runs to the largest degree that
// needs it and stops early once every element is done or NaN.
func evalPoly(b *hlo.Builder, f orthoPoly, x, nv *hlo.Value) *hlo.Value {
	n := polyDegree(b, nv)
	s64 := func(v int64) *hlo.Value { return b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), v), n.T.Shape) }
	e := &polyEnv{b: b, x: x, n: n, nf: b.Convert(n, x.T.Elem)}
	e.even = b.Compare(hlo.EQ, b.Rem(n, s64(2)), s64(0))
	cases := f.cases(e)
	q1 := f.q1(e)
	// need marks the elements the recurrence decides.
	need := b.Compare(hlo.GT, n, s64(1))
	for _, c := range cases {
		need = b.And(need, b.Not(c.when))
	}
	steps := b.Select(need, b.Sub(n, s64(1)), s64(0))
	all := make([]int64, steps.T.Rank())
	for i := range all {
		all[i] = int64(i)
	}
	maxSteps := b.Reduce(steps, b.ConstantInt(hlo.T(hlo.S64), 0), hlo.ReduceMax, all...)
	// Carried: step j, trip count, going flag, x, steps, p, q.
	init := []*hlo.Value{b.ConstantInt(hlo.T(hlo.S64), 0), maxSteps, b.Compare(hlo.EQ, maxSteps, maxSteps),
		x, steps, splat(b, x, 1), q1}
	out := b.While(init, func(rb *hlo.Builder, a []*hlo.Value) *hlo.Value {
		return rb.And(rb.Compare(hlo.LT, a[0], a[1]), a[2])
	}, func(rb *hlo.Builder, a []*hlo.Value) []*hlo.Value {
		j, xx, st, p, q := a[0], a[3], a[4], a[5], a[6]
		active := rb.And(rb.Compare(hlo.LT, rb.BroadcastTo(j, st.T.Shape), st), rb.Compare(hlo.EQ, q, q))
		k := rb.BroadcastTo(rb.Convert(rb.Add(j, rb.ConstantInt(hlo.T(hlo.S64), 1)), xx.T.Elem), xx.T.Shape)
		r := f.step(rb, xx, k, p, q)
		any := active
		if active.T.Rank() > 0 {
			dims := make([]int64, active.T.Rank())
			for i := range dims {
				dims[i] = int64(i)
			}
			any = rb.Reduce(active, rb.Compare(hlo.NE, j, j), hlo.ReduceOr, dims...)
		}
		one := rb.ConstantInt(hlo.T(hlo.S64), 1)
		return []*hlo.Value{rb.Add(j, one), a[1], any, xx, st, rb.Select(active, q, p), rb.Select(active, r, q)}
	})
	r := out[6]
	r = b.Select(b.Compare(hlo.EQ, n, s64(1)), q1, r)
	r = b.Select(b.Compare(hlo.EQ, n, s64(0)), e.k(1), r)
	for i := len(cases) - 1; i >= 0; i-- {
		r = b.Select(cases[i].when, cases[i].val, r)
	}
	return b.Select(b.Compare(hlo.LT, n, s64(0)), e.k(0), r)
}

// polyRule is the rule of aten::special_<name> on (x, n), either of which may
// be a Python number; integer and bool inputs promote to float32, and like
// CPU it rejects half precision.
func polyRule(name string) Fn {
	f := polyFamilies[name]
	return func(c *Ctx) ([]*hlo.Value, error) {
		d := c.resultType(0, 1)
		if d == Float16 || d == BFloat16 {
			return nil, notImplemented(name+"_cpu", d)
		}
		return floatArith(func(b *hlo.Builder, x, n *hlo.Value) *hlo.Value { return evalPoly(b, f, x, n) })(c)
	}
}

func init() {
	for name := range polyFamilies {
		op := "aten::special_" + name
		def(op, polyRule(name), op+".out")
		def(op+".x_scalar", polyRule(name), op+".x_scalar_out")
		def(op+".n_scalar", polyRule(name), op+".n_scalar_out")
	}
}
