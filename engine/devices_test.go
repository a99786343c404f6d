package engine

import (
	"strings"
	"testing"

	"torchtpu/dispatch"
	"torchtpu/internal/testplugin"
)

// newDevicesEngine returns a fused-mode engine with n CPU devices.
func newDevicesEngine(t *testing.T, n int) *Engine {
	t.Helper()
	path := testplugin.Path(t)
	e := New()
	if err := e.Init(path, n); err != nil {
		t.Fatal(err)
	}
	e.mode = ModeFused
	return e
}

// deviceTensor uploads vals as a 1-D float32 tensor on device d.
func deviceTensor(t *testing.T, e *Engine, d int, vals []float32) *TensorDesc {
	t.Helper()
	addr, err := e.Alloc(int64(4*len(vals)), d)
	if err != nil {
		t.Fatal(err)
	}
	desc := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: []int64{int64(len(vals))}, Strides: []int64{1}}
	if err := e.FromHost(desc, f32bytes(vals)); err != nil {
		t.Fatal(err)
	}
	return desc
}

// TestPendingGraphPerDevice records fused work on two devices, interleaved:
// each device keeps its own graph, and results land on the inputs' device.
func TestPendingGraphPerDevice(t *testing.T) {
	e := newDevicesEngine(t, 2)
	a := deviceTensor(t, e, 0, []float32{1, 2, 3})
	b := deviceTensor(t, e, 1, []float32{10, 20, 30})
	outA, err := e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(a), tensorArg(a)})
	if err != nil {
		t.Fatal(err)
	}
	outB, err := e.Op("aten::add.Tensor", []dispatch.Arg{tensorArg(b), tensorArg(b), {Kind: dispatch.ArgScalarInt, Int: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if e.dev.cur != 1 || e.d != e.dev.states[1] || e.dev.states[0].g.ops != 1 || e.d.g.ops != 1 {
		t.Fatalf("expected one pending op on each device, got current device %d", e.dev.cur)
	}
	if got := e.storages[outA[0].Addr].device; got != 0 {
		t.Errorf("a*a is on device %d", got)
	}
	if got := e.storages[outB[0].Addr].device; got != 1 {
		t.Errorf("b+b is on device %d", got)
	}
	da := &TensorDesc{Addr: outA[0].Addr, DType: dispatch.Float32, Sizes: []int64{3}, Strides: []int64{1}}
	db := &TensorDesc{Addr: outB[0].Addr, DType: dispatch.Float32, Sizes: []int64{3}, Strides: []int64{1}}
	if got := readF32(t, e, da); got[0] != 1 || got[1] != 4 || got[2] != 9 {
		t.Errorf("a*a = %v", got)
	}
	if got := readF32(t, e, db); got[0] != 20 || got[1] != 40 || got[2] != 60 {
		t.Errorf("b+b = %v", got)
	}
	if err := e.Synchronize(); err != nil {
		t.Fatal(err)
	}
	_, err = e.Op("aten::add.Tensor", []dispatch.Arg{tensorArg(a), tensorArg(b), {Kind: dispatch.ArgScalarInt, Int: 1}})
	if err == nil || !strings.Contains(err.Error(), "found at least two devices, tpu:0 and tpu:1") {
		t.Fatalf("mixing devices: %v", err)
	}
}

// TestAllReduceDevices sums one tensor per device in one replicated program,
// including values still pending in fused graphs.
func TestAllReduceDevices(t *testing.T) {
	e := newDevicesEngine(t, 4)
	var addrs []uint64
	var descs []*TensorDesc
	for d := 0; d < 4; d++ {
		x := deviceTensor(t, e, d, []float32{float32(d), 1})
		out, err := e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(x)}) // pending
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, out[0].Addr)
		descs = append(descs, &TensorDesc{Addr: out[0].Addr, DType: dispatch.Float32, Sizes: []int64{2}, Strides: []int64{1}})
	}
	if err := e.AllReduceDevices(addrs, "sum"); err != nil {
		t.Fatal(err)
	}
	for d, desc := range descs {
		if got := readF32(t, e, desc); got[0] != 14 || got[1] != 4 {
			t.Errorf("device %d: %v, want [14 4]", d, got)
		}
	}
	if err := e.AllReduceDevices([]uint64{addrs[1], addrs[0]}, "sum"); err == nil || !strings.Contains(err.Error(), "tensor 0 is on tpu:1") {
		t.Errorf("tensors out of device order: %v", err)
	}
	if err := e.AllReduceDevices(addrs, "mean"); err == nil || !strings.Contains(err.Error(), "unknown reduction") {
		t.Errorf("unknown reduction: %v", err)
	}
}
