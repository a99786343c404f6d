package engine

import (
	"testing"

	"torchtpu/dispatch"
)

// replayCall is an op whose arguments are built from float32 storages filled
// with vals; tensors are [2,3] unless the call views them otherwise.
type replayCall struct {
	name string
	op   string
	args func(x, y *TensorDesc) []dispatch.Arg
	// inplace: the result is x itself (read back from x).
	inplace bool
}

var replayCalls = []replayCall{
	{"add with alpha", "aten::add.Tensor", func(x, y *TensorDesc) []dispatch.Arg {
		return []dispatch.Arg{tensorArg(x), tensorArg(y), {Kind: dispatch.ArgScalarDouble, Double: 2}}
	}, false},
	{"mul of a transposed view", "aten::mul.Tensor", func(x, y *TensorDesc) []dispatch.Arg {
		t := &TensorDesc{Addr: y.Addr, DType: y.DType, Sizes: []int64{3, 2}, Strides: []int64{1, 3}}
		return []dispatch.Arg{tensorArg(&TensorDesc{Addr: x.Addr, DType: x.DType, Sizes: []int64{3, 2}, Strides: []int64{2, 1}}), tensorArg(t)}
	}, false},
	{"sum over dim 1", "aten::sum.dim_IntList", func(x, y *TensorDesc) []dispatch.Arg {
		return []dispatch.Arg{tensorArg(x), {Kind: dispatch.ArgIntList, Ints: []int64{1}}, {Kind: dispatch.ArgBool}, {Kind: dispatch.ArgNone}}
	}, false},
	{"in-place sub", "aten::sub_.Tensor", func(x, y *TensorDesc) []dispatch.Arg {
		return []dispatch.Arg{tensorArg(x), tensorArg(y), {Kind: dispatch.ArgScalarDouble, Double: 1}}
	}, true},
}

// runReplay fills two [2,3] storages on device dev with xs and ys, runs the
// call and returns the result's values.
func runReplay(t *testing.T, e *Engine, dev int, c replayCall, xs, ys []float32) []float32 {
	t.Helper()
	x, y := deviceTensor(t, e, dev, xs), deviceTensor(t, e, dev, ys)
	x.Sizes, x.Strides, y.Sizes, y.Strides = []int64{2, 3}, []int64{3, 1}, []int64{2, 3}, []int64{3, 1}
	outs, err := e.OpOn(c.op, dev, c.args(x, y))
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	var d *TensorDesc
	if c.inplace {
		d = x
	} else {
		o := outs[0]
		if st := e.storages[o.Addr]; st.device != dev {
			t.Fatalf("%s: result on device %d, want %d", c.name, st.device, dev)
		}
		d = &TensorDesc{Addr: o.Addr, DType: o.DType, Sizes: o.Sizes, Strides: contiguousStrides(o.Sizes)}
	}
	got := make([]byte, numel(d.Sizes)*4)
	if err := e.ToHost(d, got); err != nil {
		t.Fatal(err)
	}
	return f32s(got)
}

// TestReplayMatchesFreshLowering runs each call twice in strict mode (the
// second call replays the plan the first recorded) and compares the replay
// with the same call lowered afresh by a debug-mode engine, which never
// plans; each device learns and replays plans of its own (a plan is device
// state), while the program they launch is the same.
func TestReplayMatchesFreshLowering(t *testing.T) {
	strict := newDevicesEngine(t, 2)
	strict.mode = ModeStrict
	debug := newTestEngine(t, ModeDebug)
	first := []float32{1, 2, 3, 4, 5, 6}
	xs := []float32{-1.5, 0, 0.5, 2, 3, -2.25}
	ys := []float32{10, -20, 30, 0.25, 8, 1}
	for _, c := range replayCalls {
		for dev := 0; dev < 2; dev++ {
			runReplay(t, strict, dev, c, first, first)
		}
		for dev := 0; dev < 2; dev++ {
			hits := strict.m.FastPathHits
			got := runReplay(t, strict, dev, c, xs, ys)
			if strict.m.FastPathHits != hits+1 {
				t.Errorf("%s on device %d: the call did not replay its plan", c.name, dev)
			}
			want := runReplay(t, debug, 0, c, xs, ys)
			if debug.m.FastPathHits != 0 {
				t.Fatal("the debug engine replayed a plan")
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d values, want %d", c.name, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%s on device %d: replay gives %v, fresh lowering %v", c.name, dev, got, want)
					break
				}
			}
		}
	}
	// A hand check that the values are the op's: add with alpha 2.
	want := make([]float32, 6)
	for i := range want {
		want[i] = xs[i] + 2*ys[i]
	}
	got := runReplay(t, strict, 0, replayCalls[0], xs, ys)
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("add with alpha: %v, want %v", got, want)
		}
	}
}
