package engine

import (
	"testing"

	"torchtpu/dispatch"
)

// TestOpReadsANumberOnce checks that a foreach op's scalar, which its rule
// reads once per tensor, is one parameter of the pending graph, that a second
// op with the same number reads a parameter of its own, and that the values
// are those of multiplying each tensor twice.
func TestOpReadsANumberOnce(t *testing.T) {
	e := newTestEngine(t, ModeFused)
	const n = 40
	descs := make([]any, n)
	metas := make([]dispatch.TensorMeta, n)
	vals := make([][]float32, n)
	for i := range descs {
		addr, v := storageOf(t, e, []int64{3})
		d := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: []int64{3}, Strides: []int64{1}}
		descs[i], metas[i], vals[i] = d, d.Meta(), v
	}
	list := dispatch.Arg{Kind: dispatch.ArgTensorList, Tensors: metas, Handles: descs}
	scale := dispatch.Arg{Kind: dispatch.ArgScalarDouble, Double: 1.5}
	if _, err := e.Op("aten::_foreach_mul_.Scalar", []dispatch.Arg{list, scale}); err != nil {
		t.Fatal(err)
	}
	if got := len(e.d.g.params); got != n+1 {
		t.Fatalf("after one foreach op the graph has %d parameters, want %d (the tensors and one number)", got, n+1)
	}
	if _, err := e.Op("aten::_foreach_mul_.Scalar", []dispatch.Arg{list, scale}); err != nil {
		t.Fatal(err)
	}
	if got := len(e.d.g.params); got != n+2 {
		t.Fatalf("after two foreach ops the graph has %d parameters, want %d (one number for each op)", got, n+2)
	}
	for i, h := range descs {
		got := make([]byte, 12)
		if err := e.ToHost(h.(*TensorDesc), got); err != nil {
			t.Fatal(err)
		}
		for k, g := range f32s(got) {
			if want := vals[i][k] * 1.5 * 1.5; g != want {
				t.Fatalf("tensor %d element %d = %v, want %v", i, k, g, want)
			}
		}
	}
}
