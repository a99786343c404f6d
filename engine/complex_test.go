package engine

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// checkComplexViews writes a complex64 storage, reads it through float32
// views (view_as_real, .imag) and writes .imag back. TestWriteViews runs it
// on its engines (each engine reserves a large address range, so tests share
// them).
func checkComplexViews(t *testing.T, e *Engine, mode Mode) {
	t.Helper()
	addr, err := e.Alloc(2*3*8, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Free(addr)
	// (re, im) pairs 0+1i, 2+3i, ... as a 2x3 complex64 tensor.
	vals := make([]float32, 12)
	for i := range vals {
		vals[i] = float32(i)
	}
	whole := &TensorDesc{Addr: addr, DType: dispatch.Complex64, Sizes: []int64{2, 3}, Strides: []int64{3, 1}}
	if err := e.FromHost(whole, f32bytes(vals)); err != nil {
		t.Fatal(err)
	}
	asReal := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: []int64{2, 3, 2}, Strides: []int64{6, 2, 1}}
	got := make([]byte, 48)
	if err := e.ToHost(asReal, got); err != nil {
		t.Fatal(err)
	}
	for i, g := range f32s(got) {
		if g != vals[i] {
			t.Fatalf("%s: view_as_real element %d = %v, want %v", mode, i, g, vals[i])
		}
	}
	imag := &TensorDesc{Addr: addr, Offset: 1, DType: dispatch.Float32, Sizes: []int64{2, 3}, Strides: []int64{6, 2}}
	if err := e.FromHost(imag, f32bytes([]float32{-1, -2, -3, -4, -5, -6})); err != nil {
		t.Fatal(err)
	}
	if err := e.ToHost(whole, got); err != nil {
		t.Fatal(err)
	}
	for i, g := range f32s(got) {
		want := vals[i]
		if i%2 == 1 {
			want = float32(-(i/2 + 1))
		}
		if g != want {
			t.Fatalf("%s: after writing .imag, element %d = %v, want %v", mode, i, g, want)
		}
	}
}

// f16pairs returns the float16 bits of complex32 elements given as
// (real, imaginary) pairs of exactly representable values.
func f16pairs(vals ...float64) []byte {
	b := make([]byte, 2*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint16(b[2*i:], hlo.Float16Bits(v))
	}
	return b
}

// checkComplexHalfStorage writes complex32 values as CPU holds them (float16
// (real, imaginary) pairs), reads them back whole and through a float16 view
// (view_as_real), squares them on the device, takes their magnitudes (a
// float16 result), and rounds complex64 values into a complex32 storage.
func checkComplexHalfStorage(t *testing.T, e *Engine, mode Mode) {
	t.Helper()
	addr, err := e.Alloc(3*4, 0)
	require.NoError(t, err)
	defer e.Free(addr)
	x := &TensorDesc{Addr: addr, DType: dispatch.ComplexHalf, Sizes: []int64{3}, Strides: []int64{1}}
	src := f16pairs(-3, 4, 0.5, -1, 6, 0.25)
	require.NoError(t, e.FromHost(x, src))
	got := make([]byte, 12)
	require.NoError(t, e.ToHost(x, got))
	require.Equal(t, src, got, "%s: complex32 bytes back from the device", mode)
	asReal := &TensorDesc{Addr: addr, DType: dispatch.Float16, Sizes: []int64{3, 2}, Strides: []int64{2, 1}}
	require.NoError(t, e.ToHost(asReal, got))
	require.Equal(t, src, got, "%s: view_as_real of complex32", mode)

	// (a+bi)^2 = a^2-b^2 + 2ab i, exact in float16 for these values.
	outs, err := e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(x)})
	require.NoError(t, err)
	require.Equal(t, dispatch.ComplexHalf, outs[0].DType, "%s: x*x of complex32", mode)
	require.Equal(t, int64(12), outs[0].NBytes)
	sq := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.ComplexHalf, Sizes: []int64{3}, Strides: []int64{1}}
	require.NoError(t, e.ToHost(sq, got))
	e.Free(outs[0].Addr)
	require.Equal(t, f16pairs(-7, -24, -0.75, -1, 35.9375, 3), got, "%s: x*x of complex32", mode)

	// |x| of complex32 is float16: |-3+4i| = 5, |6+0.25i| = 6.0052 rounds to 6+2^-8.
	outs, err = e.Op("aten::abs", []dispatch.Arg{tensorArg(x)})
	require.NoError(t, err)
	require.Equal(t, dispatch.Float16, outs[0].DType, "%s: abs of complex32", mode)
	mag := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float16, Sizes: []int64{3}, Strides: []int64{1}}
	require.NoError(t, e.ToHost(mag, got[:6]))
	e.Free(outs[0].Addr)
	require.Equal(t, []uint16{0x4500, 0x3C79, 0x4601}, u16s(got[:6]), "%s: abs of complex32", mode)

	// A complex64 copy into complex32 rounds each part to nearest, ties to
	// even: 1+2^-11 is a tie (1.0), 1+3*2^-11 another (1+2^-9), and
	// 70000 passes float16's largest finite value (inf).
	caddr, err := e.Alloc(2*8, 0)
	require.NoError(t, err)
	defer e.Free(caddr)
	c64 := &TensorDesc{Addr: caddr, DType: dispatch.Complex64, Sizes: []int64{2}, Strides: []int64{1}}
	require.NoError(t, e.FromHost(c64, f32bytes([]float32{1 + 1.0/2048, -70000, 1 + 3.0/2048, 0.1})))
	two := &TensorDesc{Addr: addr, DType: dispatch.ComplexHalf, Sizes: []int64{2}, Strides: []int64{1}}
	_, err = e.Op("aten::copy_", []dispatch.Arg{tensorArg(two), tensorArg(c64), {Kind: dispatch.ArgBool}})
	require.NoError(t, err)
	require.NoError(t, e.ToHost(x, got))
	// 0.1 rounds to 0x2E66 (0.0999755859375); the third element is untouched.
	require.Equal(t, []uint16{0x3C00, 0xFC00, 0x3C02, 0x2E66, 0x4600, 0x3400}, u16s(got), "%s: complex64 rounded into complex32", mode)
}

func u16s(b []byte) []uint16 {
	xs := make([]uint16, len(b)/2)
	for i := range xs {
		xs[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return xs
}
