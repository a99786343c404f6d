package engine

import (
	"os"
	"strings"
	"testing"
	"time"

	"torchtpu/dispatch"
)

// The engine tests count programs and launches op by op in strict mode, so
// engines start with cold runs off; the tests below turn them on.
func init() { os.Setenv("TORCHTPU_COLD_RUNS", "0") }

// coldChain runs c = (x+x)*x - (x+x) in strict mode on a new storage of
// shape holding 0, 1, 2, ... and returns c's values; want holds 2i²-2i.
func coldChain(t *testing.T, e *Engine, shape []int64) (got, want []float32) {
	t.Helper()
	addr, vals := storageOf(t, e, shape)
	x := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
	desc := func(o OutTensor) *TensorDesc {
		return &TensorDesc{Addr: o.Addr, DType: o.DType, Sizes: o.Sizes, Strides: contiguousStrides(o.Sizes)}
	}
	op := func(name string, args ...dispatch.Arg) *TensorDesc {
		t.Helper()
		outs, err := e.Op(name, args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return desc(outs[0])
	}
	one := dispatch.Arg{Kind: dispatch.ArgScalarInt, Int: 1}
	a := op("aten::add.Tensor", tensorArg(x), tensorArg(x), one)
	b := op("aten::mul.Tensor", tensorArg(a), tensorArg(x))
	c := op("aten::sub.Tensor", tensorArg(b), tensorArg(a), one)
	buf := make([]byte, 4*numel(shape))
	if err := e.ToHost(c, buf); err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		want = append(want, 2*v*v-2*v)
	}
	for _, d := range []*TensorDesc{x, a, b, c} {
		e.Free(d.Addr)
	}
	return f32s(buf), want
}

func sameValues(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: element %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestColdRunThenOneOpPrograms checks the life of a cold run: three new ops
// launch as one program and their one-op programs are held for the pool; a
// second call of the ops records the run again, launches its program (no
// compile, no wait) and hands the three to the workers; once they have
// compiled, the ops run one program each through the strict fast path.
func TestColdRunThenOneOpPrograms(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	e.noColdRuns = false
	e.pool().busy.Add(1) // hold the workers: the programs stay queued
	shape := []int64{2, 3}

	got, want := coldChain(t, e, shape)
	sameValues(t, "cold run", got, want)
	held := 0
	for _, j := range e.cp.inflight {
		if j.held {
			held++
		}
	}
	if e.m.ColdRuns != 1 || e.m.BackgroundCompiles != 0 || held != 3 || e.m.Executions != 1 || e.m.GraphsCompiled != 1 {
		t.Fatalf("cold run: runs %d, background compiles %d, held %d, executions %d, compiled %d; want 1, 0, 3, 1, 1",
			e.m.ColdRuns, e.m.BackgroundCompiles, held, e.m.Executions, e.m.GraphsCompiled)
	}

	got, want = coldChain(t, e, shape)
	sameValues(t, "run again", got, want)
	if e.m.ColdRuns != 2 || e.m.BackgroundCompiles != 3 || e.m.Executions != 2 || e.m.GraphsCompiled != 1 || e.m.CompileWaits != 0 {
		t.Fatalf("run again: runs %d, background compiles %d, executions %d, compiled %d, waits %d; want 2, 3, 2, 1, 0",
			e.m.ColdRuns, e.m.BackgroundCompiles, e.m.Executions, e.m.GraphsCompiled, e.m.CompileWaits)
	}

	e.cp.busy.Add(-1)
	if err := e.AwaitCompiles(); err != nil {
		t.Fatal(err)
	}
	if e.m.GraphsCompiled != 4 {
		t.Fatalf("after the pool: %d programs compiled, want 4 (the run and three one-op programs)", e.m.GraphsCompiled)
	}
	hits := e.m.FastPathHits
	got, want = coldChain(t, e, shape)
	sameValues(t, "op by op", got, want)
	if e.m.FastPathHits-hits != 3 || e.m.Executions != 5 || e.m.GraphsCompiled != 4 || e.m.ColdRuns != 2 {
		t.Fatalf("op by op: fast path hits %d, executions %d, compiled %d, runs %d; want 3, 5, 4, 2",
			e.m.FastPathHits-hits, e.m.Executions, e.m.GraphsCompiled, e.m.ColdRuns)
	}
}

// TestColdRunOnceCompilesOnce checks that ops run once compile only their
// run's program: their held one-op programs are dropped when the pool stops.
func TestColdRunOnceCompilesOnce(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	e.noColdRuns = false
	got, want := coldChain(t, e, []int64{2, 5})
	sameValues(t, "cold run", got, want)
	e.StopCompiles()
	if e.m.ColdRuns != 1 || e.m.BackgroundCompiles != 0 || e.m.GraphsCompiled != 1 || len(e.cp.inflight) != 0 {
		t.Fatalf("runs %d, background compiles %d, compiled %d, jobs left %d; want 1, 0, 1, 0",
			e.m.ColdRuns, e.m.BackgroundCompiles, e.m.GraphsCompiled, len(e.cp.inflight))
	}
}

// TestColdRunOffCompilesInTheForeground checks TORCHTPU_COLD_RUNS=0: every
// new op compiles and launches its own program at once.
func TestColdRunOffCompilesInTheForeground(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	e.noColdRuns = true
	got, want := coldChain(t, e, []int64{3, 2})
	sameValues(t, "cold runs off", got, want)
	if e.m.ColdRuns != 0 || e.m.BackgroundCompiles != 0 || e.m.Executions != 3 || e.m.GraphsCompiled != 3 {
		t.Fatalf("runs %d, background compiles %d, executions %d, compiled %d; want 0, 0, 3, 3",
			e.m.ColdRuns, e.m.BackgroundCompiles, e.m.Executions, e.m.GraphsCompiled)
	}
}

// TestColdRunErrorAtTheOp checks that a bad op in the middle of a cold run
// fails at its call, naming it, and that the run's values stay right.
func TestColdRunErrorAtTheOp(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	e.noColdRuns = false
	shape := []int64{4, 2}
	addr, vals := storageOf(t, e, shape)
	x := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
	one := dispatch.Arg{Kind: dispatch.ArgScalarInt, Int: 1}
	outs, err := e.Op("aten::add.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(x), one})
	if err != nil {
		t.Fatal(err)
	}
	a := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
	if e.d.g.cold == nil {
		t.Fatal("the first new op did not start a cold run")
	}
	bad := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: []int64{8}, Strides: []int64{1}}
	if _, err := e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(a), tensorArg(bad)}); err == nil ||
		!strings.Contains(err.Error(), "aten::mul.Tensor") || !strings.Contains(err.Error(), "[8] float32") {
		t.Fatalf("shape mismatch in a cold run: error %v", err)
	}
	outs, err = e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(a), tensorArg(x)})
	if err != nil {
		t.Fatal(err)
	}
	b := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
	buf := make([]byte, 4*numel(shape))
	if err := e.ToHost(b, buf); err != nil {
		t.Fatal(err)
	}
	var want []float32
	for _, v := range vals {
		want = append(want, 2*v*v)
	}
	sameValues(t, "after the error", f32s(buf), want)
	if err := e.AwaitCompiles(); err != nil {
		t.Fatal(err)
	}
}

// TestOpOfARunCalledAlone checks an op of a run recorded once, called again
// on an empty graph while its one-op program is held: it compiles the
// program at once and runs it, as it would with the program on disk, rather
// than start a run of its own.
func TestOpOfARunCalledAlone(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	e.noColdRuns = false
	e.pool().busy.Add(1) // hold the workers
	shape := []int64{3, 3}
	got, want := coldChain(t, e, shape) // mul.Tensor(a, x) gets its strict plan inside the run
	sameValues(t, "cold run", got, want)

	mulAlone := func() {
		t.Helper()
		a, av := storageOf(t, e, shape)
		x, xv := storageOf(t, e, shape)
		da := &TensorDesc{Addr: a, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
		dx := &TensorDesc{Addr: x, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
		outs, err := e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(da), tensorArg(dx)})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4*numel(shape))
		if err := e.ToHost(&TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}, buf); err != nil {
			t.Fatal(err)
		}
		var w []float32
		for i := range av {
			w = append(w, av[i]*xv[i])
		}
		sameValues(t, "mul alone", f32s(buf), w)
		e.Free(a)
		e.Free(x)
		e.Free(outs[0].Addr)
	}
	runs, compiled, hits := e.m.ColdRuns, e.m.GraphsCompiled, e.m.FastPathHits
	mulAlone()
	if e.m.ColdRuns != runs || e.m.GraphsCompiled != compiled+1 || e.m.FastPathHits != hits+1 {
		t.Fatalf("mul alone: runs %d (was %d), compiled %d (was %d), fast path hits %d (was %d); want no run, its program, a hit",
			e.m.ColdRuns, runs, e.m.GraphsCompiled, compiled, e.m.FastPathHits, hits)
	}
	e.cp.busy.Add(-1)
	if err := e.AwaitCompiles(); err != nil {
		t.Fatal(err)
	}
}

// TestColdRunThirdCallWaits checks that a run's third call runs its ops one
// by one even while the pool has not compiled their programs: it waits for
// them rather than recording the run again.
func TestColdRunThirdCallWaits(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	e.noColdRuns = false
	e.pool().busy.Add(1) // hold the workers
	shape := []int64{4, 3}
	for k := range 2 {
		got, want := coldChain(t, e, shape)
		sameValues(t, "run", got, want)
		if e.m.ColdRuns != int64(k+1) {
			t.Fatalf("call %d: runs %d, want %d", k+1, e.m.ColdRuns, k+1)
		}
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		e.cp.busy.Add(-1)
	}()
	hits := e.m.FastPathHits
	got, want := coldChain(t, e, shape)
	sameValues(t, "op by op", got, want)
	if e.m.ColdRuns != 2 || e.m.FastPathHits-hits != 3 || e.m.CompileWaits == 0 {
		t.Fatalf("third call: runs %d, fast path hits %d, waits %d; want 2, 3, at least 1",
			e.m.ColdRuns, e.m.FastPathHits-hits, e.m.CompileWaits)
	}
}

// TestColdRunIgnoresTheDiskCache checks that a process whose disk cache
// holds every program records the same run as the process that compiled
// them, loading its program, so the two compute the same values.
func TestColdRunIgnoresTheDiskCache(t *testing.T) {
	t.Setenv("TORCHTPU_CACHE_DIR", t.TempDir())
	shape := []int64{3, 5}
	first := newTestEngine(t, ModeStrict)
	first.noColdRuns = false
	for range 2 {
		coldChain(t, first, shape)
	}
	if err := first.AwaitCompiles(); err != nil {
		t.Fatal(err)
	}
	first.StopCompiles()
	e := newTestEngine(t, ModeStrict)
	e.noColdRuns = false
	got, want := coldChain(t, e, shape)
	sameValues(t, "warm cache", got, want)
	if e.m.ColdRuns != 1 || e.m.GraphsCompiled != 0 || e.m.DiskHits == 0 {
		t.Fatalf("warm cache: runs %d, compiled %d, disk hits %d; want the run, loaded: 1, 0, at least 1", e.m.ColdRuns, e.m.GraphsCompiled, e.m.DiskHits)
	}
}
