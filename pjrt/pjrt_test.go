package pjrt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"torchtpu/internal/testplugin"
)

// pluginPath returns the plugin under test (testplugin.Path).
func pluginPath(t *testing.T) string {
	t.Helper()
	return testplugin.Path(t)
}

func loadPlugin(t *testing.T) *Plugin {
	t.Helper()
	p, err := Load(pluginPath(t))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

func newClient(t *testing.T, opts ClientOptions) *Client {
	t.Helper()
	c, err := loadPlugin(t).NewClient(opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesF32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func upload(t *testing.T, c *Client, data []byte, dt DType, dims []int64, dev int) *Buffer {
	t.Helper()
	b, err := c.BufferFromHost(data, dt, dims, dev)
	if err != nil {
		t.Fatalf("BufferFromHost(%v%v): %v", dt, dims, err)
	}
	t.Cleanup(b.Destroy)
	return b
}

func download(t *testing.T, b *Buffer) []byte {
	t.Helper()
	dst := make([]byte, b.Size())
	if err := b.ToHost(dst); err != nil {
		t.Fatalf("ToHost: %v", err)
	}
	return dst
}

func compile(t *testing.T, c *Client, mlir string, opts []byte) *Executable {
	t.Helper()
	x, err := c.Compile(mlir, opts)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	t.Cleanup(x.Destroy)
	return x
}

func run(t *testing.T, x *Executable, args []*Buffer, dev int) []*Buffer {
	t.Helper()
	outs, ev, err := x.Execute(args, dev)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	defer ev.Destroy()
	if err := ev.Await(); err != nil {
		t.Fatalf("execution failed: %v", err)
	}
	if !ev.IsReady() {
		t.Fatal("event not ready after Await")
	}
	for _, o := range outs {
		t.Cleanup(o.Destroy)
	}
	return outs
}

const addModule = `module @add {
  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
    %0 = "stablehlo.add"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}`

const twoResultModule = `module @two {
  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x2xf32>) {
    %0 = stablehlo.add %a, %b : tensor<4xf32>
    %1 = stablehlo.multiply %a, %b : tensor<4xf32>
    %2 = stablehlo.reshape %1 : (tensor<4xf32>) -> tensor<2x2xf32>
    return %0, %2 : tensor<4xf32>, tensor<2x2xf32>
  }
}`

func TestLoadAndVersion(t *testing.T) {
	p := loadPlugin(t)
	major, minor := p.APIVersion()
	t.Logf("plugin %s: PJRT C API %d.%d (header %d.%d)", p.Path(), major, minor, HeaderAPIMajor, HeaderAPIMinor)
	if major != 0 || minor < 81 {
		t.Fatalf("plugin API version %d.%d is not 0.81-compatible", major, minor)
	}
	if HeaderAPIMajor != major {
		t.Fatalf("header major %d != plugin major %d", HeaderAPIMajor, major)
	}
	if p.Path() != pluginPath(t) {
		t.Fatalf("Path() = %q", p.Path())
	}
	p2, err := Load(p.Path())
	if err != nil || p2 != p {
		t.Fatalf("second Load = %p, %v; want the same plugin", p2, err)
	}
}

func TestLoadErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no_such_plugin.so")
	_, err := Load(missing)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Load(missing) error = %v; want one naming %q", err, missing)
	}
	notPlugin := filepath.Join(t.TempDir(), "not_a_plugin.so")
	if err := os.WriteFile(notPlugin, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(notPlugin)
	if err == nil || !strings.Contains(err.Error(), notPlugin) {
		t.Fatalf("Load(not a plugin) error = %v; want one naming %q", err, notPlugin)
	}
}

func TestClient(t *testing.T) {
	c := newClient(t, ClientOptions{})
	if c.PlatformName() != "cpu" {
		t.Errorf("PlatformName() = %q, want cpu", c.PlatformName())
	}
	if c.DeviceCount() < 1 {
		t.Errorf("DeviceCount() = %d", c.DeviceCount())
	}
	t.Logf("platform %q version %q, %d devices", c.PlatformName(), c.PlatformVersion(), c.DeviceCount())
	if kind, err := c.DeviceKind(0); err != nil || kind != "cpu" {
		t.Errorf("DeviceKind(0) = %q, %v; want cpu", kind, err)
	}
	c4 := newClient(t, ClientOptions{CPUDeviceCount: 4})
	if c4.DeviceCount() != 4 {
		t.Errorf("DeviceCount() with CPUDeviceCount 4 = %d", c4.DeviceCount())
	}
	if _, err := c4.DeviceKind(4); err == nil {
		t.Error("DeviceKind(4) of 4 devices gave no error")
	}
}

// sampleBytes returns n valid elements of dt, covering signs, extremes and
// fractions, as little-endian bytes.
func sampleBytes(dt DType, n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		k := int64(i) - int64(n)/2
		switch dt {
		case F32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(k)*1.25+0.1))
		case F64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(k)*1e100/3))
		case F16:
			pat := []uint16{0x3C00, 0xC000, 0x3800, 0x0000, 0x7BFF, 0x0001, 0x8000, 0x7C00}
			b = binary.LittleEndian.AppendUint16(b, pat[i%len(pat)])
		case BF16:
			b = binary.LittleEndian.AppendUint16(b, uint16(math.Float32bits(float32(k)*3.5)>>16))
		case S8:
			b = append(b, byte(int8(k*37)))
		case U8:
			b = append(b, byte(i*53+250))
		case S32:
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(k)*1000003))
		case S64:
			b = binary.LittleEndian.AppendUint64(b, uint64(k*(1<<40)+7))
		case PRED:
			b = append(b, byte(i%2))
		}
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	c := newClient(t, ClientOptions{})
	for _, dt := range []DType{F32, F64, F16, BF16, S8, U8, S32, S64, PRED} {
		for _, dims := range [][]int64{{2, 3}, {}, {7}, {0, 3}} {
			n := int64(1)
			for _, d := range dims {
				n *= d
			}
			data := sampleBytes(dt, int(n))
			if len(data) != int(n)*dt.Size() {
				t.Fatalf("%v: sample has %d bytes", dt, len(data))
			}
			b := upload(t, c, data, dt, dims, 0)
			if b.DType() != dt || b.Device() != 0 || !equalDims(b.Dims(), dims) {
				t.Fatalf("%v%v: buffer reports %v%v on device %d", dt, dims, b.DType(), b.Dims(), b.Device())
			}
			ev := b.Ready()
			if err := ev.Await(); err != nil {
				t.Fatalf("%v%v: Ready: %v", dt, dims, err)
			}
			ev.Destroy()
			if got := download(t, b); !bytes.Equal(got, data) {
				t.Fatalf("%v%v: round trip gave %x, want %x", dt, dims, got, data)
			}
			b.Destroy()
			b.Destroy() // idempotent
			if err := b.ToHost(make([]byte, len(data))); err == nil {
				t.Fatalf("%v%v: ToHost after Destroy succeeded", dt, dims)
			}
		}
	}
}

func equalDims(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestBufferErrors(t *testing.T) {
	c := newClient(t, ClientOptions{})
	if _, err := c.BufferFromHost(make([]byte, 5), F32, []int64{2}, 0); err == nil {
		t.Error("BufferFromHost with wrong byte count succeeded")
	}
	if _, err := c.BufferFromHost(make([]byte, 4), F32, []int64{1}, c.DeviceCount()); err == nil {
		t.Error("BufferFromHost on a device out of range succeeded")
	}
	b := upload(t, c, f32Bytes([]float32{1, 2}), F32, []int64{2}, 0)
	if err := b.ToHost(make([]byte, 4)); err == nil {
		t.Error("ToHost with a short destination succeeded")
	}
}

func TestDType(t *testing.T) {
	cases := []struct {
		d    DType
		v    int32
		size int
		name string
	}{{PRED, 1, 1, "pred"}, {S8, 2, 1, "s8"}, {S32, 4, 4, "s32"}, {S64, 5, 8, "s64"},
		{U8, 6, 1, "u8"}, {F16, 10, 2, "f16"}, {F32, 11, 4, "f32"}, {F64, 12, 8, "f64"},
		{BF16, 13, 2, "bf16"}, {C64, 14, 8, "c64"}, {C128, 15, 16, "c128"}}
	for _, c := range cases {
		if int32(c.d) != c.v || c.d.Size() != c.size || c.d.String() != c.name {
			t.Errorf("%d: got value %d size %d name %q", c.v, int32(c.d), c.d.Size(), c.d.String())
		}
	}
	if DType(999).String() != "dtype(999)" {
		t.Errorf("unknown dtype String() = %q", DType(999).String())
	}
}

func TestCompileExecute(t *testing.T) {
	c := newClient(t, ClientOptions{})
	x := compile(t, c, addModule, DefaultCompileOptions())
	if x.NumOutputs() != 1 {
		t.Fatalf("NumOutputs() = %d", x.NumOutputs())
	}
	a := []float32{1, 2.5, -3, 4, 1e30, -0.125}
	b := []float32{0.5, -2.5, 10, 1e-3, 1e30, 7}
	ba := upload(t, c, f32Bytes(a), F32, []int64{2, 3}, 0)
	bb := upload(t, c, f32Bytes(b), F32, []int64{2, 3}, 0)
	outs := run(t, x, []*Buffer{ba, bb}, 0)
	if len(outs) != 1 || outs[0].DType() != F32 || !equalDims(outs[0].Dims(), []int64{2, 3}) || outs[0].Device() != 0 {
		t.Fatalf("outputs: %d, %v%v on %d", len(outs), outs[0].DType(), outs[0].Dims(), outs[0].Device())
	}
	got := bytesF32(download(t, outs[0]))
	for i := range a {
		if want := a[i] + b[i]; got[i] != want {
			t.Errorf("out[%d] = %v, want %v", i, got[i], want)
		}
	}
	// Empty options (which the CPU plugin cannot take) mean the defaults.
	if xe := compile(t, c, addModule, []byte{}); xe.NumOutputs() != 1 {
		t.Errorf("NumOutputs() = %d", xe.NumOutputs())
	}
	// nil options mean the defaults.
	x2 := compile(t, c, addModule, nil)
	got2 := bytesF32(download(t, run(t, x2, []*Buffer{ba, ba}, 0)[0]))
	for i := range a {
		if want := a[i] + a[i]; got2[i] != want {
			t.Errorf("a+a [%d] = %v, want %v", i, got2[i], want)
		}
	}
	if fp := x.Fingerprint(); fp != "" && fp != x2.Fingerprint() {
		t.Errorf("same module and options gave fingerprints %q and %q", fp, x2.Fingerprint())
	}
	// Wrong argument count is an error, not a crash.
	if _, _, err := x.Execute([]*Buffer{ba}, 0); err == nil {
		t.Error("Execute with one argument succeeded")
	} else {
		t.Logf("wrong arity: %v", err)
	}
}

func TestTwoResults(t *testing.T) {
	c := newClient(t, ClientOptions{})
	x := compile(t, c, twoResultModule, nil)
	if x.NumOutputs() != 2 {
		t.Fatalf("NumOutputs() = %d, want 2", x.NumOutputs())
	}
	a := []float32{1, -2, 3.5, 0.25}
	b := []float32{4, 8, -0.5, 1e20}
	outs := run(t, x, []*Buffer{
		upload(t, c, f32Bytes(a), F32, []int64{4}, 0),
		upload(t, c, f32Bytes(b), F32, []int64{4}, 0)}, 0)
	if len(outs) != 2 {
		t.Fatalf("got %d outputs", len(outs))
	}
	if !equalDims(outs[0].Dims(), []int64{4}) || !equalDims(outs[1].Dims(), []int64{2, 2}) {
		t.Fatalf("output dims %v, %v", outs[0].Dims(), outs[1].Dims())
	}
	sum, prod := bytesF32(download(t, outs[0])), bytesF32(download(t, outs[1]))
	for i := range a {
		if sum[i] != a[i]+b[i] || prod[i] != a[i]*b[i] {
			t.Errorf("[%d]: sum %v prod %v, want %v %v", i, sum[i], prod[i], a[i]+b[i], a[i]*b[i])
		}
	}
}

func TestSerializeDeserialize(t *testing.T) {
	c := newClient(t, ClientOptions{})
	x := compile(t, c, addModule, nil)
	data, err := x.Serialize()
	if err != nil {
		t.Fatalf("Serialize: %v", err)
	}
	if len(data) == 0 {
		t.Fatal("Serialize returned no bytes")
	}
	t.Logf("serialized %d bytes, fingerprint %q", len(data), x.Fingerprint())
	y, err := c.DeserializeExecutable(data)
	if err != nil {
		t.Fatalf("DeserializeExecutable: %v", err)
	}
	defer y.Destroy()
	if y.NumOutputs() != 1 {
		t.Fatalf("deserialized NumOutputs() = %d", y.NumOutputs())
	}
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{0.5, 0.25, -1, -2, 100, 1e-7}
	ba := upload(t, c, f32Bytes(a), F32, []int64{2, 3}, 0)
	bb := upload(t, c, f32Bytes(b), F32, []int64{2, 3}, 0)
	want := download(t, run(t, x, []*Buffer{ba, bb}, 0)[0])
	got := download(t, run(t, y, []*Buffer{ba, bb}, 0)[0])
	if !bytes.Equal(got, want) {
		t.Fatalf("deserialized executable gave %v, original %v", bytesF32(got), bytesF32(want))
	}
	for i, v := range bytesF32(got) {
		if v != a[i]+b[i] {
			t.Errorf("[%d] = %v, want %v", i, v, a[i]+b[i])
		}
	}
	if _, err := c.DeserializeExecutable([]byte("garbage")); err == nil {
		t.Error("DeserializeExecutable(garbage) succeeded")
	}
	y.Destroy()
	y.Destroy()
	if _, _, err := y.Execute([]*Buffer{ba, bb}, 0); err == nil {
		t.Error("Execute after Destroy succeeded")
	}
}

func TestCompileError(t *testing.T) {
	c := newClient(t, ClientOptions{})
	bad := `module @bad {
  func.func public @main(%arg0: tensor<2xf32>) -> (tensor<2xf32>) {
    %0 = "stablehlo.no_such_op"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}`
	_, err := c.Compile(bad, nil)
	if err == nil {
		t.Fatal("Compile of a bad module succeeded")
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a *pjrt.Error", err)
	}
	if pe.Code == CodeOK || pe.Message == "" || !strings.Contains(err.Error(), pe.Message) {
		t.Fatalf("error lacks the plugin's code or message: %#v", pe)
	}
	if !strings.Contains(pe.Message, "no_such_op") {
		t.Errorf("plugin message does not name the bad op: %q", pe.Message)
	}
	t.Logf("bad module: %v", err)
	if _, err := c.Compile("this is not MLIR", nil); err == nil {
		t.Error("Compile of non-MLIR text succeeded")
	}
}

func TestMultiDevice(t *testing.T) {
	c := newClient(t, ClientOptions{CPUDeviceCount: 2})
	if c.DeviceCount() != 2 {
		t.Fatalf("DeviceCount() = %d", c.DeviceCount())
	}
	a := []float32{1, 2, 3, 4, 5, 6}
	ba := upload(t, c, f32Bytes(a), F32, []int64{2, 3}, 1)
	if ba.Device() != 1 {
		t.Fatalf("buffer on device %d, want 1", ba.Device())
	}
	x := compile(t, c, addModule, CompileOptions(true))
	outs := run(t, x, []*Buffer{ba, ba}, 1)
	if outs[0].Device() != 1 {
		t.Errorf("output on device %d, want 1", outs[0].Device())
	}
	for i, v := range bytesF32(download(t, outs[0])) {
		if v != 2*a[i] {
			t.Errorf("[%d] = %v, want %v", i, v, 2*a[i])
		}
	}
	if _, _, err := x.Execute([]*Buffer{ba, ba}, 2); err == nil {
		t.Error("Execute on a device out of range succeeded")
	}
	if got := x.Devices(); len(got) != 0 {
		t.Errorf("portable executable has devices %v", got)
	}
	// A default (non-portable) executable is bound to device 0.
	x0 := compile(t, c, addModule, nil)
	if got := x0.Devices(); len(got) != 1 || got[0] != 0 {
		t.Errorf("default executable devices = %v, want [0]", got)
	}
	if _, _, err := x0.Execute([]*Buffer{ba, ba}, 1); err == nil || !strings.Contains(err.Error(), "CompileOptions(true)") {
		t.Errorf("non-portable Execute on device 1: %v", err)
	}
	// Portable executables also run on device 0, with arguments there.
	b0 := upload(t, c, f32Bytes(a), F32, []int64{2, 3}, 0)
	outs0 := run(t, x, []*Buffer{b0, b0}, 0)
	if outs0[0].Device() != 0 {
		t.Errorf("output on device %d, want 0", outs0[0].Device())
	}
	// Arguments on the wrong device are the plugin's error, not a crash.
	if _, _, err := x.Execute([]*Buffer{ba, ba}, 0); err == nil {
		t.Error("Execute with arguments on another device succeeded")
	}
}

func TestCompileOptionsEncoding(t *testing.T) {
	want := []byte{0x1a, 0x0f, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x20, 0x01, 0x28, 0x01}
	if got := DefaultCompileOptions(); !bytes.Equal(got, want) {
		t.Fatalf("DefaultCompileOptions() = %x, want %x", got, want)
	}
	if got := CompileOptions(true); !bytes.Equal(got, append(want, 0x20, 0x01)) {
		t.Fatalf("CompileOptions(true) = %x", got)
	}
}

func TestConcurrentExecute(t *testing.T) {
	c := newClient(t, ClientOptions{})
	x := compile(t, c, addModule, nil)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for it := 0; it < 20; it++ {
				a := []float32{float32(g), 1, 2, 3, 4, float32(it)}
				ba, err := c.BufferFromHost(f32Bytes(a), F32, []int64{2, 3}, 0)
				if err != nil {
					t.Errorf("BufferFromHost: %v", err)
					return
				}
				outs, ev, err := x.Execute([]*Buffer{ba, ba}, 0)
				if err != nil {
					ba.Destroy()
					t.Errorf("Execute: %v", err)
					return
				}
				dst := make([]byte, outs[0].Size())
				// ToHost waits for the execution without awaiting the event.
				if err := outs[0].ToHost(dst); err != nil {
					t.Errorf("ToHost: %v", err)
				}
				for i, v := range bytesF32(dst) {
					if v != 2*a[i] {
						t.Errorf("goroutine %d: [%d] = %v, want %v", g, i, v, 2*a[i])
					}
				}
				if err := ev.Await(); err != nil {
					t.Errorf("Await: %v", err)
				}
				ev.Destroy()
				outs[0].Destroy()
				ba.Destroy()
			}
		}(g)
	}
	wg.Wait()
}

// TestConcurrentExecuteSharedTwice launches one buffer passed twice from
// several goroutines at once: each launch holds its lock once (a second
// Lock would deadlock) and releases it, so the buffer can then be destroyed.
func TestConcurrentExecuteSharedTwice(t *testing.T) {
	c := newClient(t, ClientOptions{})
	x := compile(t, c, addModule, nil)
	a := []float32{1, -2, 3.5, 4, 5, 6}
	shared := upload(t, c, f32Bytes(a), F32, []int64{2, 3}, 0)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := 0; it < 20; it++ {
				outs, ev, err := x.Execute([]*Buffer{shared, shared}, 0)
				if err != nil {
					t.Errorf("Execute: %v", err)
					return
				}
				for i, v := range bytesF32(download(t, outs[0])) {
					if v != 2*a[i] {
						t.Errorf("[%d] = %v, want %v", i, v, 2*a[i])
					}
				}
				ev.Destroy()
				outs[0].Destroy()
			}
		}()
	}
	wg.Wait()
	shared.Destroy()
	if _, _, err := x.Execute([]*Buffer{shared, shared}, 0); err == nil {
		t.Error("a launch on a destroyed buffer succeeded")
	}
}
