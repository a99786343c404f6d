package engine

import (
	"testing"

	"torchtpu/dispatch"
)

// TestInPlaceLaunchReturnsBeforeItsProgramEnds checks that a launch whose
// program updates a storage in place (its old buffer donated) returns while
// the program runs, and that the storage reads the right values after it.
// Destroying a donated buffer waits for the program, so the engine keeps the
// replaced buffers until the launch's event is ready.
func TestInPlaceLaunchReturnsBeforeItsProgramEnds(t *testing.T) {
	e := newTestEngine(t, ModeFused)
	n := int64(768)
	a, vals := storageOf(t, e, []int64{n, n})
	z, err := e.Alloc(n*n*4, 0) // never written: reads as zeros
	if err != nil {
		t.Fatal(err)
	}
	av := &TensorDesc{Addr: a, DType: dispatch.Float32, Sizes: []int64{n, n}, Strides: []int64{n, 1}}
	zv := &TensorDesc{Addr: z, DType: dispatch.Float32, Sizes: []int64{n, n}, Strides: []int64{n, 1}}
	// Sixteen products of 768x768 matrices (about 15 GFLOP), all zeros, added into a.
	x := zv
	for i := 0; i < 16; i++ {
		outs, err := e.Op("aten::mm", []dispatch.Arg{tensorArg(x), tensorArg(av)})
		if err != nil {
			t.Fatal(err)
		}
		x = &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: outs[0].Sizes, Strides: []int64{n, 1}}
	}
	if _, err := e.Op("aten::add_.Tensor", []dispatch.Arg{tensorArg(av), tensorArg(x), {Kind: dispatch.ArgScalarInt, Int: 1}}); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	err = e.flush()
	last := e.events[len(e.events)-1]
	running := !last.ev.IsReady()
	e.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if e.m.DonatedBuffers == 0 {
		t.Fatal("the in-place add donated no buffer")
	}
	if !running || len(last.replaced) == 0 {
		t.Fatalf("the launch returned after its program ended (running %v) or dropped the buffers it replaced (%d kept)", running, len(last.replaced))
	}
	got := make([]byte, n*n*4)
	if err := e.ToHost(av, got); err != nil {
		t.Fatal(err)
	}
	for i, g := range f32s(got) {
		if g != vals[i] {
			t.Fatalf("element %d = %v, want %v", i, g, vals[i])
		}
	}
	if err := e.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if len(e.events) != 0 {
		t.Fatalf("%d launches still tracked after Synchronize", len(e.events))
	}
}
