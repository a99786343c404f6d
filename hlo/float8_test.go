package hlo

import (
	"math"
	"strings"
	"testing"
)

// TestFloat8Bits checks the host rounding to each float8 type against
// patterns derived by hand from the formats' fields.
func TestFloat8Bits(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		e    Elem
		v    float64
		want uint8
	}{
		// e4m3fn: bias 7, max 448 = 0x7E, saturating, signed NaN 0x7F.
		{F8E4M3FN, 1, 0x38}, {F8E4M3FN, -2, 0xC0}, {F8E4M3FN, 448, 0x7E}, {F8E4M3FN, 464, 0x7E},
		{F8E4M3FN, 470, 0x7E}, {F8E4M3FN, 1e30, 0x7E}, {F8E4M3FN, inf, 0x7E}, {F8E4M3FN, -inf, 0xFE},
		{F8E4M3FN, nan, 0x7F}, {F8E4M3FN, math.Copysign(0, -1), 0x80}, {F8E4M3FN, 0x1p-9, 0x01},
		{F8E4M3FN, 0x1p-10, 0x00}, {F8E4M3FN, 0x1.8p-10, 0x01}, {F8E4M3FN, 1.0625, 0x38}, {F8E4M3FN, 1.1875, 0x3A},
		// e5m2: bias 15, max 57344 = 0x7B, infinity 0x7C, NaN 0x7F.
		{F8E5M2, 1, 0x3C}, {F8E5M2, 57344, 0x7B}, {F8E5M2, 61439, 0x7B}, {F8E5M2, 61440, 0x7C},
		{F8E5M2, -inf, 0xFC}, {F8E5M2, nan, 0x7F}, {F8E5M2, 0x1p-16, 0x01}, {F8E5M2, -0x1p-17, 0x80},
		// e4m3fnuz: bias 8, max 240 = 0x7F, NaN 0x80, no negative zero.
		{F8E4M3FNUZ, 1, 0x40}, {F8E4M3FNUZ, 240, 0x7F}, {F8E4M3FNUZ, 248, 0x80}, {F8E4M3FNUZ, -inf, 0x80},
		{F8E4M3FNUZ, math.Copysign(0, -1), 0x00}, {F8E4M3FNUZ, -0x1p-10, 0x81}, {F8E4M3FNUZ, -0x1p-11, 0x00},
		// e5m2fnuz: bias 16, max 57344 = 0x7F, NaN 0x80.
		{F8E5M2FNUZ, 1, 0x40}, {F8E5M2FNUZ, 57344, 0x7F}, {F8E5M2FNUZ, 61440, 0x80}, {F8E5M2FNUZ, nan, 0x80},
		// float64 input is rounded to float32 first, as c10 does: 1 + 2^-3 + 2^-30
		// is a float32 tie (1.125) that rounds to even in e4m3fn.
		{F8E4M3FN, 1 + 0x1p-4 + 0x1p-30, 0x38},
	}
	for _, c := range cases {
		if got := Float8Bits(c.v, c.e); got != c.want {
			t.Errorf("Float8Bits(%g, %s) = %#02x, want %#02x", c.v, c.e, got, c.want)
		}
	}
}

// TestFloat8Value checks the value of every pattern: each is its own
// rounding, NaNs aside, and the named patterns have their values.
func TestFloat8Value(t *testing.T) {
	for e := range float8Formats {
		for x := 0; x < 256; x++ {
			v := Float8Value(uint8(x), e)
			if math.IsNaN(v) {
				continue
			}
			if back := Float8Bits(v, e); back != uint8(x) {
				t.Errorf("%s: pattern %#02x is %g, which rounds to %#02x", e, x, v, back)
			}
		}
	}
	named := []struct {
		e Elem
		x uint8
		v float64
	}{
		{F8E4M3FN, 0x7E, 448}, {F8E4M3FN, 0x01, 0x1p-9}, {F8E5M2, 0x7C, math.Inf(1)}, {F8E5M2, 0x7B, 57344},
		{F8E4M3FNUZ, 0x7F, 240}, {F8E4M3FNUZ, 0x01, 0x1p-10}, {F8E5M2FNUZ, 0x01, 0x1p-17},
	}
	for _, c := range named {
		if got := Float8Value(c.x, c.e); got != c.v {
			t.Errorf("Float8Value(%#02x, %s) = %g, want %g", c.x, c.e, got, c.v)
		}
	}
	for _, e := range []Elem{F8E4M3FNUZ, F8E5M2FNUZ} {
		if !math.IsNaN(Float8Value(0x80, e)) {
			t.Errorf("%s: 0x80 is not NaN", e)
		}
	}
}

// TestFloat8Literal checks that float8 constants print their exact pattern.
func TestFloat8Literal(t *testing.T) {
	b := NewBuilder()
	c := b.Constant(T(F8E5M2, 2), -1.5)
	z := b.Constant(T(F8E4M3FNUZ), math.Copysign(0, -1))
	text, _ := b.Module([]*Value{c, z})
	for _, want := range []string{"dense<0xBE> : tensor<2xf8E5M2>", "dense<0x00> : tensor<f8E4M3FNUZ>"} {
		if !strings.Contains(text, want) {
			t.Errorf("module lacks %q:\n%s", want, text)
		}
	}
}
