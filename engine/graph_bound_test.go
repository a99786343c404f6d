package engine

import (
	"errors"
	"testing"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// boundGraph captures w += x as a graph (x and w hold 0, 1, 2, 3) and returns
// the engine, the program's handle and the two whole-storage descriptions.
func boundGraph(t *testing.T) (e *Engine, h int64, x, w *TensorDesc) {
	t.Helper()
	e = newTestEngine(t, ModeStrict)
	xa, _ := storageOf(t, e, []int64{4})
	wa, _ := storageOf(t, e, []int64{4})
	x = &TensorDesc{Addr: xa, DType: dispatch.Float32, Sizes: []int64{4}, Strides: []int64{1}}
	w = &TensorDesc{Addr: wa, DType: dispatch.Float32, Sizes: []int64{4}, Strides: []int64{1}}
	if err := e.GraphCaptureBegin(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Op("aten::add_.Tensor", []dispatch.Arg{tensorArg(w), tensorArg(x), {Kind: dispatch.ArgScalarInt, Int: 1}}); err != nil {
		t.Fatal(err)
	}
	h, err := e.GraphCaptureEnd()
	if err != nil {
		t.Fatal(err)
	}
	return e, h, x, w
}

// replayWant replays graph h once and checks that w holds want and whether
// the replay bound the previous replay's storages.
func replayWant(t *testing.T, e *Engine, h int64, w *TensorDesc, want []float32, bound bool) {
	t.Helper()
	n := e.m.GraphBoundReplays
	if _, err := e.RunProgram(h, nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	if got := e.m.GraphBoundReplays - n; got != map[bool]int64{false: 0, true: 1}[bound] {
		t.Fatalf("bound replays went up by %d, want bound=%v", got, bound)
	}
	if got := readF32(t, e, w); !equalF32(got, want) {
		t.Fatalf("w is %v, want %v", got, want)
	}
}

// TestGraphReplayBindsCheckedStorages replays a graph: the first replay checks
// its storages in full, the later ones bind them as that replay left them, and
// a pending value on a bound storage sends the replay through the full checks
// (it is flushed first) with the same result.
func TestGraphReplayBindsCheckedStorages(t *testing.T) {
	e, h, x, w := boundGraph(t)
	replayWant(t, e, h, w, []float32{0, 2, 4, 6}, false)
	replayWant(t, e, h, w, []float32{0, 3, 6, 9}, true)
	replayWant(t, e, h, w, []float32{0, 4, 8, 12}, true)
	e.mode = ModeFused
	if _, err := e.Op("aten::add_.Scalar", []dispatch.Arg{tensorArg(x), {Kind: dispatch.ArgScalarInt, Int: 1}, {Kind: dispatch.ArgScalarInt, Int: 1}}); err != nil {
		t.Fatal(err)
	}
	replayWant(t, e, h, w, []float32{1, 6, 11, 16}, false)
	replayWant(t, e, h, w, []float32{2, 8, 14, 20}, true)
}

// TestGraphReplayBoundChecksEachCondition changes, one at a time, each thing
// boundHolds checks on a bound storage and restores it: each change alone
// sends the replay through the full checks.
func TestGraphReplayBoundChecksEachCondition(t *testing.T) {
	e, h, x, w := boundGraph(t)
	replayWant(t, e, h, w, []float32{0, 2, 4, 6}, false)
	p := e.programs.get(h)
	st := e.storages[x.Addr]
	if len(p.bound.sts) != 2 || !e.boundHolds(p) {
		t.Fatalf("bound %v, holds %v", p.bound, e.boundHolds(p))
	}
	seg := &segment{epoch: 7}
	changes := map[string]func(undo bool){
		"dead": func(undo bool) { st.dead = !undo },
		"pending": func(undo bool) {
			st.pending = map[bool]*hlo.Value{false: e.d.g.param(st.buf, storedType(st.dtype, st.shape))}[undo]
		},
		"padded": func(undo bool) { st.pad = map[bool]*padding{false: {dim: 0, cap: 8}}[undo] },
		"no buffer": func(undo bool) {
			if !undo {
				st.buf, seg.ext = nil, append(seg.ext, st.buf)
			} else {
				st.buf = seg.ext[len(seg.ext)-1]
			}
		},
		"dtype": func(undo bool) {
			st.dtype = map[bool]dispatch.DType{false: dispatch.Int32, true: dispatch.Float32}[undo]
		},
		"shape":    func(undo bool) { st.shape = map[bool][]int64{false: {2, 2}, true: {4}}[undo] },
		"unshaped": func(undo bool) { st.shaped = undo },
		"device":   func(undo bool) { st.device = map[bool]int{false: 1, true: 0}[undo] },
		"in a tape": func(undo bool) {
			e.d.seg, st.seg = map[bool]*segment{false: seg}[undo], map[bool]uint64{false: 7}[undo]
		},
	}
	for name, change := range changes {
		change(false)
		if e.boundHolds(p) {
			t.Errorf("%s: the bound storages still hold", name)
		}
		change(true)
		if !e.boundHolds(p) {
			t.Fatalf("%s: undone, the bound storages do not hold", name)
		}
	}
	replayWant(t, e, h, w, []float32{0, 3, 6, 9}, true)
}

// TestGraphReplayBoundErrorsAsBefore checks that a replay after a bound
// storage changed in a way the program cannot take fails with the error the
// full checks give when nothing is bound: a storage rewritten whole at
// another shape or dtype, and a storage freed while the graph binds it.
func TestGraphReplayBoundErrorsAsBefore(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, e *Engine, h int64, x *TensorDesc)
	}{
		{"reshaped", func(t *testing.T, e *Engine, h int64, x *TensorDesc) {
			if err := e.FromHost(&TensorDesc{Addr: x.Addr, DType: dispatch.Float32, Sizes: []int64{2, 2}, Strides: []int64{2, 1}}, f32bytes([]float32{1, 2, 3, 4})); err != nil {
				t.Fatal(err)
			}
		}},
		{"retyped", func(t *testing.T, e *Engine, h int64, x *TensorDesc) {
			if err := e.FromHost(&TensorDesc{Addr: x.Addr, DType: dispatch.Int32, Sizes: []int64{4}, Strides: []int64{1}}, make([]byte, 16)); err != nil {
				t.Fatal(err)
			}
		}},
		{"freed", func(t *testing.T, e *Engine, h int64, x *TensorDesc) {
			e.pin(e.programs.get(h).stores, -1) // as if the graph no longer held it
			e.Free(x.Addr)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errs [2]error
			for k, warm := range []bool{false, true} {
				e, h, x, w := boundGraph(t)
				if warm {
					replayWant(t, e, h, w, []float32{0, 2, 4, 6}, false)
					replayWant(t, e, h, w, []float32{0, 3, 6, 9}, true)
				}
				tc.change(t, e, h, x)
				n := e.m.GraphBoundReplays
				_, errs[k] = e.RunProgram(h, nil, nil, 0)
				if e.m.GraphBoundReplays != n {
					t.Fatalf("warm=%v: the replay bound the previous replay's storages", warm)
				}
			}
			if errs[0] == nil || errs[1] == nil || errs[0].Error() != errs[1].Error() {
				t.Fatalf("errors differ: %v, then bound: %v", errs[0], errs[1])
			}
			var m *MismatchError
			if tc.name != "freed" && !errors.As(errs[1], &m) {
				t.Fatalf("%v is not a MismatchError", errs[1])
			}
		})
	}
}
