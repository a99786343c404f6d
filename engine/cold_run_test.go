package engine

import (
	"os"
	"strings"
	"testing"

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
	got = readF32(t, e, c)
	for _, v := range vals {
		want = append(want, 2*v*v-2*v)
	}
	for _, d := range []*TensorDesc{x, a, b, c} {
		e.Free(d.Addr)
	}
	return got, want
}

func sameValues(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: element %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestColdRunLaunchesOpByOp checks the life of a cold run: three new ops
// record as a run while their one-op programs go to the pool; with the
// workers held, the flush compiles the three itself and launches them one by
// one, compiling no program for the run; the next call of the ops replays
// their strict plans, compiling nothing.
func TestColdRunLaunchesOpByOp(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	e.noColdRuns = false
	e.pool().busy.Add(1) // hold the workers: the programs stay queued
	shape := []int64{2, 3}

	got, want := coldChain(t, e, shape)
	sameValues(t, "cold run", got, want)
	if e.m.ColdRuns != 1 || e.m.ColdRunSteps != 3 || e.m.Executions != 3 || e.m.GraphsCompiled != 3 || len(e.cp.inflight) != 0 {
		t.Fatalf("cold run: runs %d, steps %d, executions %d, compiled %d, jobs left %d; want 1, 3, 3, 3, 0",
			e.m.ColdRuns, e.m.ColdRunSteps, e.m.Executions, e.m.GraphsCompiled, len(e.cp.inflight))
	}
	hits := e.m.FastPathHits
	got, want = coldChain(t, e, shape)
	sameValues(t, "op by op", got, want)
	if e.m.FastPathHits-hits != 3 || e.m.Executions != 6 || e.m.GraphsCompiled != 3 || e.m.ColdRuns != 1 {
		t.Fatalf("op by op: fast path hits %d, executions %d, compiled %d, runs %d; want 3, 6, 3, 1",
			e.m.FastPathHits-hits, e.m.Executions, e.m.GraphsCompiled, e.m.ColdRuns)
	}
	e.cp.busy.Add(-1)
}

// TestColdRunWaitsForTheWorkers checks a run whose programs the workers
// compile: the flush waits for them and launches the ops one by one.
func TestColdRunWaitsForTheWorkers(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	e.noColdRuns = false
	got, want := coldChain(t, e, []int64{2, 5})
	sameValues(t, "cold run", got, want)
	if e.m.ColdRuns != 1 || e.m.ColdRunSteps != 3 || e.m.GraphsCompiled != 3 || len(e.cp.inflight) != 0 {
		t.Fatalf("runs %d, steps %d, compiled %d, jobs left %d; want 1, 3, 3, 0",
			e.m.ColdRuns, e.m.ColdRunSteps, e.m.GraphsCompiled, len(e.cp.inflight))
	}
}

// TestColdRunInPlaceWrites checks a run whose ops write a storage in place
// (its buffer donated to the write) and read it after: y = x + x;
// x *= y; z = x - y gives x = 2i² and z = 2i² - 2i, as op by op.
func TestColdRunInPlaceWrites(t *testing.T) {
	for _, cold := range []bool{true, false} {
		e := newTestEngine(t, ModeStrict)
		e.noColdRuns = !cold
		shape := []int64{3, 4}
		addr, vals := storageOf(t, e, shape)
		x := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
		one := dispatch.Arg{Kind: dispatch.ArgScalarInt, Int: 1}
		desc := func(outs []OutTensor, err error) *TensorDesc {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			return &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
		}
		y := desc(e.Op("aten::add.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(x), one}))
		if _, err := e.Op("aten::mul_.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(y)}); err != nil {
			t.Fatal(err)
		}
		z := desc(e.Op("aten::sub.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(y), one}))
		zv, xv := readF32(t, e, z), readF32(t, e, x)
		var wx, wz []float32
		for _, v := range vals {
			wx, wz = append(wx, 2*v*v), append(wz, 2*v*v-2*v)
		}
		sameValues(t, "x", xv, wx)
		sameValues(t, "z", zv, wz)
		if cold && (e.m.ColdRuns != 1 || e.m.ColdRunSteps != 3) {
			t.Fatalf("runs %d, steps %d; want 1, 3", e.m.ColdRuns, e.m.ColdRunSteps)
		}
	}
}

// TestColdRunKeepsAValueTwoStoragesHold checks a run in which an op's value
// is held by two storages and one of them is then written in place: y = x + x;
// z = y.clone(); y *= x. The write's step must not take over the buffer z
// keeps, so it runs its program donating nothing: z = 2i, y = 2i².
func TestColdRunKeepsAValueTwoStoragesHold(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	e.noColdRuns = false
	shape := []int64{2, 5}
	addr, vals := storageOf(t, e, shape)
	x := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
	desc := func(outs []OutTensor, err error) *TensorDesc {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
	}
	one := dispatch.Arg{Kind: dispatch.ArgScalarInt, Int: 1}
	y := desc(e.Op("aten::add.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(x), one}))
	z := desc(e.Op("aten::clone", []dispatch.Arg{tensorArg(y), {Kind: dispatch.ArgNone}}))
	if _, err := e.Op("aten::mul_.Tensor", []dispatch.Arg{tensorArg(y), tensorArg(x)}); err != nil {
		t.Fatal(err)
	}
	yv, zv := readF32(t, e, y), readF32(t, e, z)
	var wy, wz []float32
	for _, v := range vals {
		wy, wz = append(wy, 2*v*v), append(wz, 2*v)
	}
	sameValues(t, "y", yv, wy)
	sameValues(t, "z", zv, wz)
	if e.m.ColdRuns != 1 || e.m.ColdRunSteps != 3 {
		t.Fatalf("runs %d, steps %d; want 1, 3", e.m.ColdRuns, e.m.ColdRunSteps)
	}
}

// TestColdRunEndsBeforeAHostWrite checks a write from the host into part of
// a storage that a cold run reads: the run launches op by op first, and the
// values are the ones of the ops in order: y = x + x; x[1] = 100, 101, 102;
// z = x * y.
func TestColdRunEndsBeforeAHostWrite(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	e.noColdRuns = false
	shape := []int64{4, 3}
	addr, vals := storageOf(t, e, shape)
	x := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
	one := dispatch.Arg{Kind: dispatch.ArgScalarInt, Int: 1}
	outs, err := e.Op("aten::add.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(x), one})
	if err != nil {
		t.Fatal(err)
	}
	y := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
	row := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: []int64{3}, Strides: []int64{1}, Offset: 3}
	if err := e.FromHost(row, f32bytes([]float32{100, 101, 102})); err != nil {
		t.Fatal(err)
	}
	outs, err = e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(y)})
	if err != nil {
		t.Fatal(err)
	}
	z := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)}
	got := readF32(t, e, z)
	var want []float32
	for i, v := range vals {
		xi := v
		if i >= 3 && i < 6 {
			xi = float32(100 + i - 3)
		}
		want = append(want, xi*2*v)
	}
	sameValues(t, "z", got, want)
	// add and mul run as steps of their runs, the write as a program of its own.
	if e.m.ColdRunSteps != 2 || e.m.Executions != 3 {
		t.Fatalf("steps %d, executions %d; want 2, 3", e.m.ColdRunSteps, e.m.Executions)
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
	got := readF32(t, e, b)
	var want []float32
	for _, v := range vals {
		want = append(want, 2*v*v)
	}
	sameValues(t, "after the error", got, want)
	if err := e.AwaitCompiles(); err != nil {
		t.Fatal(err)
	}
}

// TestOpOfARunCalledAlone checks an op of a run called again on an empty
// graph: it runs the one-op program the run's flush compiled, rather than
// start a run of its own.
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
		got := readF32(t, e, &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: shape, Strides: contiguousStrides(shape)})
		var w []float32
		for i := range av {
			w = append(w, av[i]*xv[i])
		}
		sameValues(t, "mul alone", got, w)
		e.Free(a)
		e.Free(x)
		e.Free(outs[0].Addr)
	}
	runs, compiled, hits := e.m.ColdRuns, e.m.GraphsCompiled, e.m.FastPathHits
	mulAlone()
	if e.m.ColdRuns != runs || e.m.GraphsCompiled != compiled || e.m.FastPathHits != hits+1 {
		t.Fatalf("mul alone: runs %d (was %d), compiled %d (was %d), fast path hits %d (was %d); want no run, its program, a hit",
			e.m.ColdRuns, runs, e.m.GraphsCompiled, compiled, e.m.FastPathHits, hits)
	}
	e.cp.busy.Add(-1)
	if err := e.AwaitCompiles(); err != nil {
		t.Fatal(err)
	}
}

// TestColdRunIgnoresTheDiskCache checks that a process whose disk cache
// holds every program records the same run as the process that compiled
// them, loading its programs.
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
