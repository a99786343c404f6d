package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// qrLstsqOut holds what linalgLstsq computes for flattened batches.
type qrLstsqOut struct {
	x, resid, rank, sig *hlo.Value
}

// qrLstsqSolve is the minimum-norm least-squares solution of a [B, m, n]
// x = rhs [B, m, k] through the SVD, dropping singular values at or below
// rcond times the largest; it also returns the residual sums of squares
// [B, k], the numerical rank [B] and the singular values [B, min(m, n)].
func qrLstsqSolve(b *hlo.Builder, a, rhs, rcond *hlo.Value) qrLstsqOut {
	nb, n := a.T.Shape[0], a.T.Shape[2]
	k := rhs.T.Shape[2]
	e := a.T.Elem
	u, sig, vh := qrSVD(b, a, false, true)
	p := sig.T.Shape[1]
	var x, rank *hlo.Value
	if p == 0 {
		x = qrFill(b, e, []int64{nb, n, k}, 0)
		rank = qrFill(b, hlo.S64, []int64{nb}, 0)
	} else {
		smax := b.Reshape(b.Slice(sig, []int64{0, 0}, []int64{nb, 1}, []int64{1, 1}), nb)
		thresh := qrPerBatch(b, b.Mul(smax, b.BroadcastTo(rcond, []int64{nb})), sig.T.Shape)
		keep := b.Compare(hlo.GT, sig, thresh)
		one := qrFill(b, e, sig.T.Shape, 1)
		inv := qrSelectZero(b, keep, b.Div(one, b.Select(keep, sig, one)))
		utb := qrMatmulTN(b, u, rhs)
		utb = b.Mul(utb, qrAlong(b, inv, utb.T.Shape, 1))
		x = qrMatmulTN(b, vh, utb)
		rank = qrSum(b, b.Convert(keep, hlo.S64), 1)
	}
	r := b.Sub(qrMatmul(b, a, x), rhs)
	resid := qrSum(b, b.Mul(r, r), 1)
	return qrLstsqOut{x, resid, rank, sig}
}

// linalgLstsq is linalg_lstsq(self, b, rcond, *, driver) -> (solution,
// residuals, rank, singular_values), with the CPU drivers' output rules:
// rank for all drivers but gels, singular values for gelsd and gelss, and
// residuals when m > n for gels, and for gelsd and gelss at full rank.
func linalgLstsq(c *Ctx) ([]*hlo.Value, error) {
	am, bm := c.Meta(0), c.Meta(1)
	const fn = "torch.linalg.lstsq"
	if am.Rank() < 2 {
		return nil, Errorf("%s: input must have at least 2 dimensions.", fn)
	}
	if bm.Rank() < 1 {
		return nil, Errorf("%s: other must have at least 1 dimension.", fn)
	}
	if am.DType != bm.DType {
		return nil, Errorf("%s: Expected input and other to have the same dtype, but got input's dtype %s and other's dtype %s", fn, am.DType, bm.DType)
	}
	d := am.Rank() - bm.Rank()
	if d < 0 || d > 1 {
		return nil, Errorf("%s: input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1", fn)
	}
	vector := d == 1
	m, n := am.Sizes[am.Rank()-2], am.Sizes[am.Rank()-1]
	bsz := bm.Sizes
	if vector {
		bsz = append(append([]int64{}, bm.Sizes...), 1)
		if bm.Sizes[bm.Rank()-1] != m {
			return nil, Errorf("%s: input.size(-2) should match other.size(-1)", fn)
		}
	} else if bm.Sizes[bm.Rank()-2] != m {
		return nil, Errorf("%s: input.size(-2) should match other.size(-2)", fn)
	}
	driver := "gelsy"
	if c.Has(3) {
		driver = c.Str(3, "gelsy")
	}
	if !slices.Contains([]string{"gels", "gelsy", "gelsd", "gelss"}, driver) {
		return nil, Errorf("%s: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)", fn)
	}
	if err := qrFloatCheck("linalg_lstsq_cpu", am); err != nil {
		return nil, err
	}
	batch, err := BroadcastShapes(am.Sizes[:am.Rank()-2], bsz[:len(bsz)-2])
	if err != nil {
		return nil, err
	}
	k := bsz[len(bsz)-1]
	e := am.DType.Elem()
	rc := qrEps(e) * float64(max(m, n))
	if c.Has(2) {
		rc = c.Float(2, rc)
	}
	solve := func() qrLstsqOut {
		b := c.B
		a := b.BroadcastTo(c.T(0), append(append([]int64{}, batch...), m, n))
		rhs := b.Reshape(c.T(1), bsz...)
		rhs = b.BroadcastTo(rhs, append(append([]int64{}, batch...), m, k))
		return qrLstsqSolve(b, qrFlat(b, a), qrFlat(b, rhs), c.R.Scalar(rc, e))
	}
	out := solve()
	withResid := m > n && driver == "gels"
	if m > n && (driver == "gelsd" || driver == "gelss") {
		// Residuals exist only at full rank: a sync point, so solve again after it.
		ranks, err := c.R.Int64Values(out.rank)
		if err != nil {
			return nil, err
		}
		withResid = !slices.ContainsFunc(ranks, func(r int64) bool { return r != n })
		out = solve()
	}
	b := c.B
	empty := qrFill(b, e, []int64{0}, 0)
	x := qrUnflat(b, out.x, batch)
	resid := empty
	if withResid {
		resid = qrUnflat(b, out.resid, batch)
	}
	if vector {
		x = b.Reshape(x, append(append([]int64{}, batch...), n)...)
	}
	rank := qrFill(b, hlo.S64, []int64{0}, 0)
	if driver != "gels" {
		rank = qrUnbroadcast(b, b.Reshape(out.rank, batch...), len(batch), am.Sizes[:am.Rank()-2])
	}
	sig := empty
	if driver == "gelsd" || driver == "gelss" {
		sig = qrUnbroadcast(b, qrUnflat(b, out.sig, batch), len(batch), am.Sizes[:am.Rank()-2])
	}
	return []*hlo.Value{x, resid, rank, sig}, nil
}

func init() {
	def("aten::linalg_lstsq", linalgLstsq).Needs = readsResults
}

// qrUnbroadcast takes x, whose first nbatch dims are a broadcast of the
// batch shape from, back to from followed by x's other dims (the copies
// along broadcast dims are equal).
func qrUnbroadcast(b *hlo.Builder, x *hlo.Value, nbatch int, from []int64) *hlo.Value {
	r := x.T.Rank()
	start, limit, strides := make([]int64, r), append([]int64{}, x.T.Shape...), make([]int64, r)
	off := nbatch - len(from)
	for i := range strides {
		strides[i] = 1
		if i < off || (i < nbatch && from[i-off] == 1) {
			limit[i] = min(limit[i], 1)
		}
	}
	dims := append(append([]int64{}, from...), x.T.Shape[nbatch:]...)
	return b.Reshape(b.Slice(x, start, limit, strides), dims...)
}
