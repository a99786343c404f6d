package engine

import (
	"slices"
	"testing"

	"torchtpu/dispatch"
)

// TestOpOnLaidOutWritesTheAskedMemoryOrder checks that a result asked for in
// a permuted memory order lands in a storage of the permuted shape holding
// the transposed values, on the full path, on both fast paths and in a step
// replay, and that the same op asked for no layout still gives a contiguous
// result.
func TestOpOnLaidOutWritesTheAskedMemoryOrder(t *testing.T) {
	for _, run := range []struct {
		mode   Mode
		noTape bool
	}{{ModeDebug, false}, {ModeStrict, false}, {ModeFused, true}, {ModeFused, false}} {
		mode := run.mode
		e := newTestEngine(t, mode)
		e.noStepTape = run.noTape
		addr, vals := storageOf(t, e, []int64{2, 3, 4})
		// x is the storage seen as [2, 4, 3] (its last two dimensions swapped).
		x := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: []int64{2, 4, 3}, Strides: []int64{12, 1, 4}}
		args := []dispatch.Arg{tensorArg(x), {Kind: dispatch.ArgScalarInt, Int: 2}}
		for call := 0; call < 3; call++ {
			outs, err := e.OpOnLaidOut("aten::mul.Scalar", -1, args, [][]int64{{0, 2, 1}})
			if err != nil {
				t.Fatal(err)
			}
			o := outs[0]
			if !slices.Equal(o.Sizes, []int64{2, 3, 4}) || o.NBytes != 24*4 {
				t.Fatalf("%s call %d: storage shape %v of %d bytes, want [2 3 4] of 96", mode, call, o.Sizes, o.NBytes)
			}
			// The storage in memory order holds 2*x laid out as x's storage is.
			got := make([]byte, 96)
			whole := &TensorDesc{Addr: o.Addr, DType: dispatch.Float32, Sizes: o.Sizes, Strides: contiguousStrides(o.Sizes)}
			if err := e.ToHost(whole, got); err != nil {
				t.Fatal(err)
			}
			for i, g := range f32s(got) {
				if g != 2*vals[i] {
					t.Fatalf("%s call %d: element %d = %v, want %v", mode, call, i, g, 2*vals[i])
				}
			}
			// The tensor PyTorch sees has x's sizes and strides.
			seen := &TensorDesc{Addr: o.Addr, DType: dispatch.Float32, Sizes: []int64{2, 4, 3}, Strides: []int64{12, 1, 4}}
			if err := e.ToHost(seen, got); err != nil {
				t.Fatal(err)
			}
			for i, g := range f32s(got) {
				if want := 2 * vals[refIndices(x.view())[i]]; g != want {
					t.Fatalf("%s call %d: logical element %d = %v, want %v", mode, call, i, g, want)
				}
			}
			e.Free(o.Addr)
		}
		outs, err := e.OpOn("aten::mul.Scalar", -1, args)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(outs[0].Sizes, []int64{2, 4, 3}) {
			t.Fatalf("%s: without a layout the storage shape is %v, want [2 4 3]", mode, outs[0].Sizes)
		}
		e.Free(outs[0].Addr)
		if mode == ModeStrict && e.m.FastPathHits == 0 {
			t.Fatalf("strict: the laid-out op was never replayed")
		}
		if mode == ModeFused && run.noTape && e.m.FusedFastPathHits == 0 {
			t.Fatalf("fused: the laid-out op was never pasted")
		}
		if mode == ModeFused && !run.noTape && e.m.StepReplayOps == 0 {
			t.Fatalf("fused: the laid-out op was never replayed from a step tape")
		}
	}
}
