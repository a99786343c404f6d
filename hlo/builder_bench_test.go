package hlo

import "testing"

// BenchmarkBuildAttention builds what a decoding step's attention rule
// records: scores against a padded cache, a mask from the cache's size, a
// softmax and the weighted values.
func BenchmarkBuildAttention(b *testing.B) {
	for i := 0; i < b.N; i++ {
		bl := NewBuilder()
		q := bl.Param(T(F32, 1, 4, 1, 32))
		k := bl.Param(T(F32, 1, 4, 128, 32))
		v := bl.Param(T(F32, 1, 4, 128, 32))
		size := bl.Param(T(S64))
		sc := bl.DotGeneral(q, k, []int64{0, 1}, []int64{0, 1}, []int64{3}, []int64{3})
		sc = bl.Mul(sc, bl.BroadcastTo(bl.Scalar(F32, 0.17), sc.T.Shape))
		io := bl.Iota(T(S64, 1, 4, 1, 128), 3)
		valid := bl.Compare(LT, io, bl.BroadcastTo(size, io.T.Shape))
		sc = bl.Select(valid, sc, bl.BroadcastTo(bl.Scalar(F32, -1e30), sc.T.Shape))
		mx := bl.Reduce(sc, bl.Scalar(F32, -1e30), ReduceMax, 3)
		p := bl.Exp(bl.Sub(sc, bl.BroadcastInDim(mx, sc.T.Shape, []int64{0, 1, 2})))
		sum := bl.Reduce(p, bl.Scalar(F32, 0), ReduceSum, 3)
		o := bl.DotGeneral(p, v, []int64{0, 1}, []int64{0, 1}, []int64{3}, []int64{2})
		o = bl.Div(o, bl.BroadcastInDim(sum, o.T.Shape, []int64{0, 1, 2}))
		_ = bl.Transpose(o, 0, 2, 1, 3)
	}
}
