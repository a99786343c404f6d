package dispatch

import "torchtpu/hlo"

// isinOf compares every element of x with every element of test (both
// already of one dtype) and returns whether each element of x occurs in test,
// negated when invert is set.
func isinOf(b *hlo.Builder, x, test *hlo.Value, invert bool) *hlo.Value {
	n, k := x.T.NumElements(), test.T.NumElements()
	var hit *hlo.Value
	if k == 0 {
		hit = b.BroadcastTo(b.Scalar(hlo.Pred, 0), []int64{n})
	} else {
		xs := b.BroadcastInDim(b.Reshape(x, n), []int64{n, k}, []int64{0})
		ts := b.BroadcastInDim(b.Reshape(test, k), []int64{n, k}, []int64{1})
		hit = b.Reduce(b.Compare(hlo.EQ, xs, ts), b.Scalar(hlo.Pred, 0), hlo.ReduceOr, 1)
	}
	if invert {
		hit = b.Not(hit)
	}
	return b.Reshape(hit, x.T.Shape...)
}

// isinRule is isin for the Tensor_Tensor, Tensor_Scalar and Scalar_Tensor
// overloads: elements (argument 0) and test elements (argument 1) are compared
// in their promoted dtype; assume_unique (argument 2) does not change the result.
func isinRule(c *Ctx) ([]*hlo.Value, error) {
	d := c.resultType(0, 1)
	x := c.Value(0, d)
	t := c.Value(1, d)
	return []*hlo.Value{isinOf(c.B, x, t, c.Bool(3, false))}, nil
}

func init() {
	def("aten::isin.Tensor_Tensor", isinRule, "aten::isin.Tensor_Tensor_out").Range = isinRange
	def("aten::isin.Tensor_Scalar", isinRule, "aten::isin.Tensor_Scalar_out").Range = isinRange
	def("aten::isin.Scalar_Tensor", isinRule, "aten::isin.Scalar_Tensor_out").Range = isinRange
}
