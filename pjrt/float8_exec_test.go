package pjrt

import (
	"encoding/binary"
	"math"
	"testing"

	"torchtpu/hlo"
)

// float8Probes returns float32 bit patterns that exercise a conversion to
// float8: every float16 value widened, and for each exponent from far below
// the float8 subnormals to past float8_e5m2's largest value, mantissas whose
// top twelve bits take every value and whose low bits sit at, just above and
// just below rounding ties; both signs, with the infinities and NaNs.
func float8Probes() []uint32 {
	var xs []uint32
	for h := 0; h < 1<<16; h++ {
		xs = append(xs, math.Float32bits(float32(float16Value(uint16(h)))))
	}
	for e := uint32(90); e <= 150; e++ {
		for top := uint32(0); top < 1<<12; top++ {
			for _, low := range []uint32{0, 1, 0x3ff, 0x400, 0x401, 0x7ff} {
				x := e<<23 | top<<11 | low
				xs = append(xs, x, x|1<<31)
			}
		}
	}
	return append(xs, 0, 1<<31, 1, 0x7f7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0xff812345)
}

// float16Value returns the value of the float16 bit pattern h.
func float16Value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * mant * math.Ldexp(1, -24)
	case 31:
		if mant != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * (1 + mant/1024) * math.Ldexp(1, exp-15)
}

var float8Elems = []struct {
	elem hlo.Elem
	dt   DType
}{{hlo.F8E4M3FN, F8E4M3FN}, {hlo.F8E5M2, F8E5M2}, {hlo.F8E4M3FNUZ, F8E4M3FNUZ}, {hlo.F8E5M2FNUZ, F8E5M2FNUZ}}

// TestFloat8FromF32 runs the integer lowering of float32 -> float8 on the
// plugin and checks every pattern against the host rounding (Float8Bits),
// which tests/test_float8.py checks against PyTorch's.
func TestFloat8FromF32(t *testing.T) {
	xs := float8Probes()
	in := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(in[4*i:], x)
	}
	c := newClient(t, ClientOptions{})
	for _, f := range float8Elems {
		b := hlo.NewBuilder()
		p := b.Param(hlo.T(hlo.F32, int64(len(xs))))
		text, _ := b.Module([]*hlo.Value{b.Float8FromF32(p, f.elem)})
		exe := compile(t, c, text, DefaultCompileOptions())
		got := download(t, run(t, exe, []*Buffer{upload(t, c, in, F32, []int64{int64(len(xs))}, 0)}, 0)[0])
		format, _ := hlo.Float8FormatOf(f.elem)
		bad := 0
		for i, x := range xs {
			if want := format.FromFloat32(x); got[i] != want {
				if bad++; bad <= 5 {
					t.Errorf("%s: float32 %08x (%g) gives %02x, want %02x", f.elem, x, math.Float32frombits(x), got[i], want)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d patterns differ", f.elem, bad, len(xs))
		}
	}
}

// TestFloat8ToF32 widens every float8 pattern on the plugin: the value of
// Float8Value, and for NaNs the float32 bits PyTorch's conversion gives
// (quiet, payload kept, for float8_e5m2; 0x7ff00000 with the sign for
// float8_e4m3fn; 0x7f800001 for the fnuz types' one NaN).
func TestFloat8ToF32(t *testing.T) {
	in := make([]byte, 256)
	for i := range in {
		in[i] = byte(i)
	}
	nanBits := map[hlo.Elem]map[int]uint32{
		hlo.F8E4M3FN:   {0x7f: 0x7ff00000, 0xff: 0xfff00000},
		hlo.F8E5M2:     {0x7d: 0x7fe00000, 0x7e: 0x7fc00000, 0x7f: 0x7fe00000, 0xfd: 0xffe00000, 0xfe: 0xffc00000, 0xff: 0xffe00000},
		hlo.F8E4M3FNUZ: {0x80: 0x7f800001},
		hlo.F8E5M2FNUZ: {0x80: 0x7f800001},
	}
	c := newClient(t, ClientOptions{})
	for _, f := range float8Elems {
		b := hlo.NewBuilder()
		p := b.Param(hlo.T(f.elem, 256))
		text, _ := b.Module([]*hlo.Value{b.Float8ToF32(p)})
		exe := compile(t, c, text, DefaultCompileOptions())
		got := bytesF32(download(t, run(t, exe, []*Buffer{upload(t, c, in, f.dt, []int64{256}, 0)}, 0)[0]))
		for i, g := range got {
			want := math.Float32bits(float32(hlo.Float8Value(uint8(i), f.elem)))
			if nb, ok := nanBits[f.elem][i]; ok {
				want = nb
			}
			if math.Float32bits(g) != want {
				t.Errorf("%s: pattern %02x widens to %08x, want %08x", f.elem, i, math.Float32bits(g), want)
			}
		}
	}
}

// TestFloat8LoadStore checks the form values are computed in: loading and
// storing every pattern gives it back (float8_e5m2's NaN payloads included),
// and a loaded value made canonical is what Float8ToF32 gives.
func TestFloat8LoadStore(t *testing.T) {
	in := make([]byte, 256)
	for i := range in {
		in[i] = byte(i)
	}
	c := newClient(t, ClientOptions{})
	for _, f := range float8Elems {
		b := hlo.NewBuilder()
		p := b.Param(hlo.T(f.elem, 256))
		loaded := b.Float8Load(p)
		canon := b.BitcastConvert(b.Float8CanonicalNaN(loaded), hlo.U32)
		text, _ := b.Module([]*hlo.Value{b.Float8Store(loaded, f.elem), canon, b.BitcastConvert(b.Float8ToF32(p), hlo.U32)})
		exe := compile(t, c, text, DefaultCompileOptions())
		res := run(t, exe, []*Buffer{upload(t, c, in, f.dt, []int64{256}, 0)}, 0)
		back, got, want := download(t, res[0]), download(t, res[1]), download(t, res[2])
		for i := range in {
			if back[i] != in[i] {
				t.Errorf("%s: pattern %02x stores back as %02x", f.elem, i, back[i])
			}
			if g, w := binary.LittleEndian.Uint32(got[4*i:]), binary.LittleEndian.Uint32(want[4*i:]); g != w {
				t.Errorf("%s: pattern %02x made canonical is %08x, want %08x", f.elem, i, g, w)
			}
		}
	}
}
