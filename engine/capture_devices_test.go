package engine

import (
	"errors"
	"strings"
	"testing"

	"torchtpu/dispatch"
)

// TestCaptureRunsOnItsInputsDevice captures y = x*x + z on tpu:1, with the
// engine's current device still tpu:0: the capture run and the replays run
// on tpu:1 and their results are tpu:1 storages, inputs on tpu:0 are a
// mismatch, and the program's messages name the compiled graph.
func TestCaptureRunsOnItsInputsDevice(t *testing.T) {
	e := newDevicesEngine(t, 2)
	e.mode = ModeStrict
	x := deviceTensor(t, e, 1, []float32{1, 2, 3})
	z := deviceTensor(t, e, 1, []float32{10, 20, 30})
	if err := e.useDevice(0); err != nil {
		t.Fatal(err)
	}
	if err := e.CaptureBegin("frame 0 graph 0 forward", []*TensorDesc{x, z}); err != nil {
		t.Fatal(err)
	}
	sq, err := e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(x)})
	if err != nil {
		t.Fatal(err)
	}
	sqd := &TensorDesc{Addr: sq[0].Addr, DType: dispatch.Float32, Sizes: []int64{3}, Strides: []int64{1}}
	outs, err := e.Op("aten::add.Tensor", []dispatch.Arg{tensorArg(sqd), tensorArg(z), {Kind: dispatch.ArgScalarInt, Int: 1}})
	if err != nil {
		t.Fatal(err)
	}
	y := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: []int64{3}, Strides: []int64{1}}
	h, _, err := e.CaptureEnd([]*TensorDesc{x, z}, []*TensorDesc{y})
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{11, 24, 39}
	if got := readF32(t, e, y); !equalF32(got, want) {
		t.Fatalf("capture run gave %v, want %v", got, want)
	}
	p := e.programs.get(h)
	if p.device != 1 {
		t.Fatalf("program captured on tpu:%d, want tpu:1", p.device)
	}
	fl := p.flushCtx()
	line := slowCompileLine(&fl, strings.Repeat("ab", 16))
	if !strings.Contains(line, "of 2 ops (aten::mul.Tensor, aten::add.Tensor), captured from compiled frame 0 graph 0 forward") {
		t.Fatalf("slow-compile notice: %q", line)
	}
	for range 2 {
		res, err := e.RunProgram(h, []*TensorDesc{x, z}, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		if st := e.storages[res[0].Addr]; st.device != 1 {
			t.Fatalf("replay result on tpu:%d, want tpu:1", st.device)
		}
		got := readF32(t, e, &TensorDesc{Addr: res[0].Addr, DType: dispatch.Float32, Sizes: []int64{3}, Strides: []int64{1}})
		if !equalF32(got, want) {
			t.Fatalf("replay gave %v, want %v", got, want)
		}
		e.Free(res[0].Addr)
	}
	x0 := deviceTensor(t, e, 0, []float32{1, 2, 3})
	z0 := deviceTensor(t, e, 0, []float32{10, 20, 30})
	var mm *MismatchError
	if _, err := e.RunProgram(h, []*TensorDesc{x0, z0}, nil, 1); !errors.As(err, &mm) || !strings.Contains(err.Error(), "captured on tpu:1") {
		t.Fatalf("inputs on tpu:0 gave %v, want a MismatchError naming the devices", err)
	}
	e.FreeProgram(h)
}

// TestCaptureOfInputsOnTwoDevicesRunsEagerly checks that a graph whose
// inputs sit on two devices is not captured, says why, and still computes.
func TestCaptureOfInputsOnTwoDevicesRunsEagerly(t *testing.T) {
	e := newDevicesEngine(t, 2)
	e.mode = ModeStrict
	x := deviceTensor(t, e, 0, []float32{1, 2})
	z := deviceTensor(t, e, 1, []float32{3, 4})
	if err := e.CaptureBegin("g", []*TensorDesc{x, z}); err != nil {
		t.Fatal(err)
	}
	outs, err := e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(z), tensorArg(z)})
	if err != nil {
		t.Fatal(err)
	}
	y := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: []int64{2}, Strides: []int64{1}}
	var nc *ErrNotCaptured
	if _, _, err := e.CaptureEnd([]*TensorDesc{x, z}, []*TensorDesc{y}); !errors.As(err, &nc) || !strings.Contains(nc.Reason, "tpu:0") {
		t.Fatalf("CaptureEnd gave %v, want ErrNotCaptured naming the devices", err)
	}
	if got := readF32(t, e, y); !equalF32(got, []float32{9, 16}) {
		t.Fatalf("got %v", got)
	}
}
