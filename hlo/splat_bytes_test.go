package hlo

import (
	"bytes"
	"testing"
)

func TestSplatBytes(t *testing.T) {
	cases := []struct {
		lit  string
		elem Elem
		want []byte
	}{
		{"dense<0x00000000>", F32, []byte{0, 0, 0, 0}},
		{"dense<0x3F800000>", F32, []byte{0, 0, 0x80, 0x3f}},
		{"dense<0xBC00>", F16, []byte{0x00, 0xbc}},
		{"dense<0x3FF0000000000000>", F64, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}},
		{"dense<-3>", S32, []byte{0xfd, 0xff, 0xff, 0xff}},
		{"dense<-1>", S64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"dense<255>", U8, []byte{0xff}},
		{"dense<true>", Pred, []byte{1}},
		{"dense<false>", Pred, []byte{0}},
	}
	for _, c := range cases {
		got, ok := SplatBytes(c.lit, c.elem)
		if !ok || !bytes.Equal(got, c.want) {
			t.Errorf("SplatBytes(%q, %v) = %x, %v; want %x", c.lit, c.elem, got, ok, c.want)
		}
	}
	for _, c := range []struct {
		lit  string
		elem Elem
	}{
		{"dense<0x0000>", F32},                  // wrong width
		{"dense<256>", U8},                      // out of range
		{"dense<-1>", U32},                      // negative unsigned
		{"dense<1>", F32},                       // floats print as bits
		{"dense<true>", S8},                     // bool literal for an integer
		{"dense<(0x00000000,0x00000000)>", C64}, // complex
		{"dense<[1, 2]>", S32},                  // not a splat
	} {
		if got, ok := SplatBytes(c.lit, c.elem); ok {
			t.Errorf("SplatBytes(%q, %v) = %x; want no element", c.lit, c.elem, got)
		}
	}
}
