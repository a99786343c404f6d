package engine

import (
	"bytes"
	"testing"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// TestTapeKeySplitsHardAndSoft checks the two parts of an op's tape key: the
// same call on other storages of the same geometry has the same key; a number
// or a view offset changes only the soft part; a shape, an op or aliasing
// changes the hard part; and a storage the segment has seen is named by its
// slot, not by its state again.
func TestTapeKeySplitsHardAndSoft(t *testing.T) {
	e := newTestEngine(t, ModeFused)
	mk := func(sizes ...int64) *TensorDesc {
		return deviceTensor(t, e, 0, make([]float32, numel(sizes)))
	}
	view := func(d *TensorDesc, off int64, sizes ...int64) *TensorDesc {
		return &TensorDesc{Addr: d.Addr, Offset: off, DType: d.DType, Sizes: sizes, Strides: contiguousStrides(sizes)}
	}
	key := func(s *segment, op string, args ...dispatch.Arg) (hard, soft []byte) {
		t.Helper()
		if !e.tapeKey(s, op, args) {
			t.Fatalf("%s: no key", op)
		}
		return bytes.Clone(s.hard), bytes.Clone(s.soft)
	}
	fresh := func() *segment { e.segments++; return &segment{epoch: e.segments} }
	add := func(s *segment, a, b *TensorDesc, alpha float64) ([]byte, []byte) {
		return key(s, "aten::add.Tensor", tensorArg(a), tensorArg(b), scalarD(alpha))
	}
	a, b := mk(6), mk(6)
	h0, s0 := add(fresh(), view(a, 0, 2, 3), view(b, 0, 2, 3), 1)
	if h, s := add(fresh(), view(mk(6), 0, 2, 3), view(mk(6), 0, 2, 3), 1); !bytes.Equal(h, h0) || !bytes.Equal(s, s0) {
		t.Error("the same call on other storages changed the key")
	}
	if h, s := add(fresh(), view(a, 0, 2, 3), view(b, 0, 2, 3), 0.5); !bytes.Equal(h, h0) || bytes.Equal(s, s0) {
		t.Error("another alpha should change the soft part alone")
	}
	big := mk(9)
	h1, s1 := add(fresh(), view(a, 0, 2, 3), view(big, 0, 2, 3), 1)
	if h, s := add(fresh(), view(a, 0, 2, 3), view(big, 3, 2, 3), 1); !bytes.Equal(h, h1) || bytes.Equal(s, s1) {
		t.Error("another view offset should change the soft part alone")
	}
	hard := map[string][]byte{"base": h0}
	for name, h := range map[string][]byte{
		"a shape": func() []byte { h, _ := add(fresh(), view(a, 0, 6), view(b, 0, 6), 1); return h }(),
		"an op": func() []byte {
			h, _ := key(fresh(), "aten::sub.Tensor", tensorArg(view(a, 0, 2, 3)), tensorArg(view(b, 0, 2, 3)), scalarD(1))
			return h
		}(),
		"aliasing":      func() []byte { h, _ := add(fresh(), view(a, 0, 2, 3), view(a, 0, 2, 3), 1); return h }(),
		"storage sizes": h1,
	} {
		for prev, p := range hard {
			if bytes.Equal(h, p) {
				t.Errorf("%s: same hard key as %s", name, prev)
			}
		}
		hard[name] = h
	}
	// In one segment, a storage seen before is named by its slot: a second
	// op on the same storages has another key than on new ones.
	s := fresh()
	add(s, view(a, 0, 2, 3), view(b, 0, 2, 3), 1)
	again, _ := add(s, view(a, 0, 2, 3), view(b, 0, 2, 3), 1)
	other, _ := add(s, view(mk(6), 0, 2, 3), view(mk(6), 0, 2, 3), 1)
	if bytes.Equal(again, h0) || bytes.Equal(again, other) || len(s.slots) != 4 {
		t.Errorf("slots: %d storages, keys again=%x other=%x", len(s.slots), again, other)
	}
}

// TestStepReplayLaunchesTheTapeProgram runs one step, y = (x + 2w) * x with w
// updated in place by w += y, four times on new x in fused mode, each step
// ended by reading y. The first step records its tape, the others replay it
// (the third with another alpha, which reruns add's rule); the values are
// derived by hand and one program is compiled.
func TestStepReplayLaunchesTheTapeProgram(t *testing.T) {
	e := newTestEngine(t, ModeFused)
	runSteps(t, e, []float64{2, 2, 3, 3}, func(int) {})
	m := e.m
	if m.StepReplays != 3 || m.StepReplayOps != 8 || m.StepReplayReruns != 1 || m.StepReplayDeparts != 0 || m.GraphsCompiled != 1 {
		t.Errorf("replays %d, ops %d, reruns %d, fallbacks %d, programs %d; want 3, 8, 1, 0, 1",
			m.StepReplays, m.StepReplayOps, m.StepReplayReruns, m.StepReplayDeparts, m.GraphsCompiled)
	}
}

// TestStepReplaySurvivesAFullNumberCache empties the number cache and fills
// it with other numbers before each launch of TestStepReplayLaunchesTheTapeProgram's
// steps: the replay's launch then fetches the numbers its program binds into a
// full cache. Emptied there, the cache destroyed the numbers fetched before,
// and the step was recorded again. It is emptied at the end of an op instead.
func TestStepReplaySurvivesAFullNumberCache(t *testing.T) {
	e := newTestEngine(t, ModeFused)
	filler := uint64(0)
	fill := func() {
		for len(e.d.scalars) < maxScalars {
			filler++
			e.scalarBuffer(scalarKey{elem: hlo.F32, bits: filler<<20 | 1, exact: true})
		}
	}
	runSteps(t, e, []float64{2, 2, 3, 4, 4}, func(int) {
		fill()
		e.trimScalars()
		fill()
	})
	if m := e.m; m.StepReplays != 4 || m.StepReplayDeparts != 0 {
		t.Errorf("replays %d, fallbacks %d; want 4, 0", m.StepReplays, m.StepReplayDeparts)
	}
	if _, err := e.Op("aten::neg", []dispatch.Arg{tensorArg(deviceTensor(t, e, 0, []float32{1}))}); err != nil {
		t.Fatal(err)
	}
	if len(e.d.scalars) >= maxScalars {
		t.Errorf("the number cache holds %d values after an op; want fewer than %d", len(e.d.scalars), maxScalars)
	}
}

// runSteps runs y = (x + alpha*w) * x, w += y for each alpha, on a new x each
// step, calling before(step) before the read that launches the step. It
// checks y at each step and w at the end against values derived by hand.
func runSteps(t *testing.T, e *Engine, alphas []float64, before func(step int)) {
	t.Helper()
	w := []float32{1, -2, 0.5}
	tw := deviceTensor(t, e, 0, w)
	for step, alpha := range alphas {
		x := []float32{float32(step) + 1, -1, 2}
		tx := deviceTensor(t, e, 0, x)
		outs, err := e.Op("aten::add.Tensor", []dispatch.Arg{tensorArg(tx), tensorArg(tw), scalarD(alpha)})
		if err != nil {
			t.Fatal(err)
		}
		sum := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: []int64{3}, Strides: []int64{1}}
		if outs, err = e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(sum), tensorArg(tx)}); err != nil {
			t.Fatal(err)
		}
		e.Free(sum.Addr)
		y := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: []int64{3}, Strides: []int64{1}}
		if _, err := e.Op("aten::add_.Tensor", []dispatch.Arg{tensorArg(tw), tensorArg(y), scalarD(1)}); err != nil {
			t.Fatal(err)
		}
		e.Free(tx.Addr)
		before(step)
		got := make([]byte, 12)
		if err := e.ToHost(y, got); err != nil {
			t.Fatal(err)
		}
		for i, v := range f32s(got) {
			want := (x[i] + float32(alpha)*w[i]) * x[i]
			if v != want {
				t.Fatalf("step %d: y[%d] = %v, want %v", step, i, v, want)
			}
			w[i] += want
		}
		e.Free(y.Addr)
	}
	got := make([]byte, 12)
	if err := e.ToHost(tw, got); err != nil {
		t.Fatal(err)
	}
	for i, v := range f32s(got) {
		if v != w[i] {
			t.Fatalf("w[%d] = %v, want %v", i, v, w[i])
		}
	}
}
