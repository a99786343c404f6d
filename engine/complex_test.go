package engine

import (
	"testing"

	"torchtpu/dispatch"
)

// checkComplexViews writes a complex64 storage, reads it through float32
// views (view_as_real, .imag) and writes .imag back. TestWriteViews runs it
// on its engines (each engine reserves a large address range, so tests share
// them).
func checkComplexViews(t *testing.T, e *Engine, mode Mode) {
	t.Helper()
	addr, err := e.Alloc(2*3*8, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Free(addr)
	// (re, im) pairs 0+1i, 2+3i, ... as a 2x3 complex64 tensor.
	vals := make([]float32, 12)
	for i := range vals {
		vals[i] = float32(i)
	}
	whole := &TensorDesc{Addr: addr, DType: dispatch.Complex64, Sizes: []int64{2, 3}, Strides: []int64{3, 1}}
	if err := e.FromHost(whole, f32bytes(vals)); err != nil {
		t.Fatal(err)
	}
	asReal := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: []int64{2, 3, 2}, Strides: []int64{6, 2, 1}}
	got := make([]byte, 48)
	if err := e.ToHost(asReal, got); err != nil {
		t.Fatal(err)
	}
	for i, g := range f32s(got) {
		if g != vals[i] {
			t.Fatalf("%s: view_as_real element %d = %v, want %v", mode, i, g, vals[i])
		}
	}
	imag := &TensorDesc{Addr: addr, Offset: 1, DType: dispatch.Float32, Sizes: []int64{2, 3}, Strides: []int64{6, 2}}
	if err := e.FromHost(imag, f32bytes([]float32{-1, -2, -3, -4, -5, -6})); err != nil {
		t.Fatal(err)
	}
	if err := e.ToHost(whole, got); err != nil {
		t.Fatal(err)
	}
	for i, g := range f32s(got) {
		want := vals[i]
		if i%2 == 1 {
			want = float32(-(i/2 + 1))
		}
		if g != want {
			t.Fatalf("%s: after writing .imag, element %d = %v, want %v", mode, i, g, want)
		}
	}
}
