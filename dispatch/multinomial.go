package dispatch

import (
	"math"
	"math/bits"

	"torchtpu/hlo"
)

// multinomialCheck raises CPU's errors for bad weights. It reads one small
// code per row to the host (a sync, like other value checks), so the caller
// must read its tensor values again afterwards. fast selects the messages of
// CPU's sampling path without replacement (also taken for one sample).
func multinomialCheck(c *Ctx, rows, cats int64, fast bool) error {
	b := c.B
	p := b.Reshape(b.Convert(c.T(0), hlo.F64), rows, cats)
	shape := []int64{rows, cats}
	k := func(v float64) *hlo.Value { return b.BroadcastTo(b.Scalar(hlo.F64, v), shape) }
	ki := func(v int64, s ...int64) *hlo.Value { return b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), v), s) }
	negOrNaN := b.Not(b.Compare(hlo.GE, p, k(0)))
	inf := b.Compare(hlo.EQ, p, k(math.Inf(1)))
	sum := b.Reduce(b.Select(b.Or(negOrNaN, inf), k(0), p), b.Scalar(hlo.F64, 0), hlo.ReduceSum, 1)
	zeroSum := b.Compare(hlo.LE, sum, b.BroadcastTo(b.Scalar(hlo.F64, 0), []int64{rows}))
	var code *hlo.Value
	if fast {
		// Invalid entries anywhere come first (code 1), then empty rows (code 2).
		bad := b.Reduce(b.Or(negOrNaN, inf), b.ConstantInt(hlo.T(hlo.Pred), 0), hlo.ReduceOr, 0, 1)
		code = b.Select(zeroSum, ki(2, rows), ki(0, rows))
		code = b.Select(b.BroadcastTo(bad, []int64{rows}), ki(1, rows), code)
	} else {
		// Row by row: the first bad entry (1: negative or NaN, 2: infinite),
		// else 3 for a row that sums to zero.
		big := int64(4) * (cats + 1)
		j := b.Iota(hlo.T(hlo.S64, rows, cats), 1)
		key := b.Add(b.Mul(j, ki(4, rows, cats)), b.Select(negOrNaN, ki(1, rows, cats), ki(2, rows, cats)))
		key = b.Select(b.Or(negOrNaN, inf), key, ki(big, rows, cats))
		first := b.Reduce(key, b.ConstantInt(hlo.T(hlo.S64), big), hlo.ReduceMin, 1)
		code = b.Select(zeroSum, ki(3, rows), ki(0, rows))
		code = b.Select(b.Compare(hlo.LT, first, ki(big, rows)), b.Rem(first, ki(4, rows)), code)
	}
	vals, err := c.R.Int64Values(code)
	if err != nil {
		return err
	}
	msgs := map[bool][]string{
		true: {"", "probability tensor contains either `inf`, `nan` or element < 0",
			"invalid multinomial distribution (sum of probabilities <= 0)"},
		false: {"", "invalid multinomial distribution (encountering probability entry < 0)",
			"invalid multinomial distribution (encountering probability entry = infinity or NaN)",
			"invalid multinomial distribution (sum of probabilities <= 0)"},
	}
	for _, v := range vals {
		if v != 0 {
			return Errorf("%s", msgs[fast][v])
		}
	}
	return nil
}

// sampleWithReplacement draws n categories per row of the weights p
// ([rows, cats], float64): a binary search of u * total in the running sums,
// limited to the row's last positive weight so rounding never picks a zero.
func (c *Ctx) sampleWithReplacement(p *hlo.Value, n int64, seedArg int) *hlo.Value {
	b := c.B
	rows, cats := p.T.Shape[0], p.T.Shape[1]
	cdf := b.Scan([]*hlo.Value{p}, []*hlo.Value{b.Scalar(hlo.F64, 0)}, 1, binaryBody((*hlo.Builder).Add))[0]
	total := sliceDim(b, cdf, 1, cats-1, cats)
	out := []int64{rows, n}
	u := c.uniform01(seedArg, out, Float64)
	t := b.Mul(u, b.BroadcastInDim(b.Reshape(total, rows), out, []int64{0}))
	ki := func(v int64, s ...int64) *hlo.Value { return b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), v), s) }
	j := b.Iota(hlo.T(hlo.S64, rows, cats), 1)
	pos := b.Compare(hlo.GT, p, b.BroadcastTo(b.Scalar(hlo.F64, 0), p.T.Shape))
	last := b.Reduce(b.Select(pos, j, ki(0, rows, cats)), b.ConstantInt(hlo.T(hlo.S64), 0), hlo.ReduceMax, 1)
	base := b.Mul(b.Iota(hlo.T(hlo.S64, rows, n), 0), ki(cats, rows, n))
	flat := b.Reshape(cdf, rows*cats)
	steps := int64(bits.Len64(uint64(cats)))
	res := b.For(steps, []*hlo.Value{ki(0, rows, n), ki(cats-1, rows, n), t, base, flat},
		func(rb *hlo.Builder, _ *hlo.Value, a []*hlo.Value) []*hlo.Value {
			lo, hi := a[0], a[1]
			two := rb.BroadcastTo(rb.ConstantInt(hlo.T(hlo.S64), 2), out)
			mid := rb.Div(rb.Add(lo, hi), two)
			v := rb.GatherFlat(a[4], rb.Add(a[3], mid))
			le := rb.Compare(hlo.LE, v, a[2])
			open := rb.Compare(hlo.LT, lo, hi)
			one := rb.BroadcastTo(rb.ConstantInt(hlo.T(hlo.S64), 1), out)
			nlo := rb.Select(rb.And(open, le), rb.Add(mid, one), lo)
			nhi := rb.Select(rb.And(open, rb.Not(le)), mid, hi)
			return []*hlo.Value{nlo, nhi, a[2], a[3], a[4]}
		})
	return b.Min(res[0], b.BroadcastInDim(last, out, []int64{0}))
}

// multinomialRule is multinomial(self, num_samples, replacement, *,
// generator): category indices drawn from each row of non-negative weights.
// Without replacement it keeps the num_samples largest of p / E with E
// exponential (the Gumbel-top-k race CPU also uses).
func multinomialRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	n := c.Int(1, 0)
	repl := c.Bool(2, false)
	if m.Rank() < 1 || m.Rank() > 2 {
		return nil, Errorf("prob_dist must be 1 or 2 dim")
	}
	if !m.DType.IsFloat() {
		return nil, Errorf("multinomial only supports floating-point dtypes for input, got: %s", scalarTypeName(m.DType))
	}
	if c.Op == "aten::multinomial.out" {
		if od := c.Args[len(c.Args)-1].Tensors[0].DType; od != Int64 {
			return nil, Errorf("multinomial expects Long tensor out, got: %s", scalarTypeName(od))
		}
	}
	if n <= 0 {
		return nil, Errorf("cannot sample n_sample <= 0 samples")
	}
	cats := m.Sizes[m.Rank()-1]
	if !repl && n > cats {
		return nil, Errorf("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
	}
	if cats > 1<<24 {
		return nil, Errorf("number of categories cannot exceed 2^24")
	}
	rows := int64(1)
	outShape := []int64{n}
	if m.Rank() == 2 {
		rows = m.Sizes[0]
		outShape = []int64{rows, n}
	}
	if rows == 0 {
		return []*hlo.Value{c.B.ConstantInt(hlo.T(hlo.S64, outShape...), 0)}, nil
	}
	if cats == 0 {
		return nil, Errorf("invalid multinomial distribution (sum of probabilities <= 0)")
	}
	fast := !repl || n == 1
	if err := multinomialCheck(c, rows, cats, fast); err != nil {
		return nil, err
	}
	b := c.B // the check started a new graph
	p := b.Reshape(b.Convert(c.T(0), hlo.F64), rows, cats)
	if repl {
		return []*hlo.Value{b.Reshape(c.sampleWithReplacement(p, n, 3), outShape...)}, nil
	}
	shape := []int64{rows, cats}
	e := b.Neg(b.Log(b.Sub(b.BroadcastTo(b.Scalar(hlo.F64, 1), shape), c.uniform01(3, shape, Float64))))
	zero := b.BroadcastTo(b.Scalar(hlo.F64, 0), shape)
	q := b.Select(b.Compare(hlo.GT, p, zero), b.Div(p, e), zero)
	_, idx := sortWithIndices(b, q, 1, true)
	return []*hlo.Value{b.Reshape(sliceDim(b, idx, 1, 0, n), outShape...)}, nil
}

func init() {
	def("aten::multinomial", multinomialRule).Needs = Needs{Results: true, Random: true}
}
