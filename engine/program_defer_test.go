package engine

import (
	"testing"

	"torchtpu/dispatch"
)

// TestDeferredReplays captures y = x*x; z += 1 (x a sliding window of a larger
// storage) in fused mode and replays it three times: nothing launches until
// the step mark, which launches the three replays as one program; their
// results and z's in-place updates are right, a second step finds that
// program compiled, and with deferral off each replay launches.
func TestDeferredReplays(t *testing.T) {
	e := newTestEngine(t, ModeFused)
	addr, vals := storageOf(t, e, []int64{6, 2})
	win := func(row int64) *TensorDesc {
		return &TensorDesc{Addr: addr, Offset: 2 * row, DType: dispatch.Float32, Sizes: []int64{2, 2}, Strides: []int64{2, 1}}
	}
	zaddr, zvals := storageOf(t, e, []int64{3})
	z := &TensorDesc{Addr: zaddr, DType: dispatch.Float32, Sizes: []int64{3}, Strides: []int64{1}}
	if err := e.CaptureBegin("test graph", []*TensorDesc{win(0), z}); err != nil {
		t.Fatal(err)
	}
	outs, err := e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(win(0)), tensorArg(win(0))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Op("aten::add_.Scalar", []dispatch.Arg{tensorArg(z), {Kind: dispatch.ArgScalarInt, Int: 1}, {Kind: dispatch.ArgScalarInt, Int: 1}}); err != nil {
		t.Fatal(err)
	}
	y := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: []int64{2, 2}, Strides: []int64{2, 1}}
	h, _, err := e.CaptureEnd([]*TensorDesc{win(0), z}, []*TensorDesc{y})
	if err != nil {
		t.Fatal(err)
	}
	if e.programs.get(h).deferred == nil {
		t.Fatal("the captured graph was not cut for deferred replays")
	}
	want := func(row int64) []float32 {
		var w []float32
		for _, v := range vals[2*row : 2*row+4] {
			w = append(w, v*v)
		}
		return w
	}
	rows := []int64{2, 4, 3}
	step := func() (launches int64) {
		execs := e.m.Executions
		var res []OutTensor
		for _, row := range rows {
			r, err := e.RunProgram(h, []*TensorDesc{win(row), z}, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			res = append(res, r[0])
		}
		launched := e.m.Executions - execs
		if err := e.MarkStep(); err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			got := readF32(t, e, &TensorDesc{Addr: r.Addr, DType: dispatch.Float32, Sizes: r.Sizes, Strides: []int64{2, 1}})
			if !equalF32(got, want(rows[i])) {
				t.Fatalf("window %d gave %v, want %v", rows[i], got, want(rows[i]))
			}
			e.Free(r.Addr)
		}
		if launched > 0 && !e.noDefer {
			t.Fatalf("%d launches before the step mark", launched)
		}
		return e.m.Executions - execs
	}
	if n := step(); n != 1 || e.m.CompiledDeferred != 3 {
		t.Fatalf("a step of three replays made %d launches and %d deferred replays, want 1 and 3", n, e.m.CompiledDeferred)
	}
	compiled := e.m.GraphsCompiled
	if n := step(); n != 1 || e.m.GraphsCompiled != compiled {
		t.Fatalf("the second step made %d launches and compiled %d programs, want 1 and 0", n, e.m.GraphsCompiled-compiled)
	}
	e.noDefer = true
	if n := step(); n != 3 {
		t.Fatalf("with deferral off a step of three replays made %d launches, want 3", n)
	}
	// One capture run and nine replays, each adding 1.
	if got := readF32(t, e, z); !equalF32(got, []float32{zvals[0] + 10, zvals[1] + 10, zvals[2] + 10}) {
		t.Fatalf("z is %v, want %v + 10", got, zvals)
	}
	e.FreeProgram(h)
}
