package pjrt

import (
	"bytes"
	"testing"
)

func TestWithOverridesEncoding(t *testing.T) {
	base := CompileOptions(false)
	got, err := WithOverrides(base, "xla_b=7, xla_a=true")
	if err != nil {
		t.Fatal(err)
	}
	// Entries sorted by name: xla_a (bool true) then xla_b (int 7), each a
	// map entry {1: name, 2: OptionOverrideProto}.
	want := append([]byte{}, base...)
	want = append(want, 0x3a, 11, 0x0a, 5, 'x', 'l', 'a', '_', 'a', 0x12, 2, 0x10, 1)
	want = append(want, 0x3a, 11, 0x0a, 5, 'x', 'l', 'a', '_', 'b', 0x12, 2, 0x18, 7)
	if !bytes.Equal(got, want) {
		t.Fatalf("WithOverrides = % x, want % x", got, want)
	}
	if _, err := WithOverrides(base, "nonsense"); err == nil {
		t.Fatal("a pair without '=' was accepted")
	}
	if same, _ := WithOverrides(base, " "); !bytes.Equal(same, base) {
		t.Fatal("an empty spec changed the options")
	}
}

func TestOverridesCompile(t *testing.T) {
	c := newClient(t, ClientOptions{})
	opts, err := WithOverrides(DefaultCompileOptions(), "xla_cpu_enable_fast_math=false,xla_cpu_prefer_vector_width=256")
	if err != nil {
		t.Fatal(err)
	}
	x := compile(t, c, `module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}`, opts)
	in := upload(t, c, f32Bytes([]float32{1, 2, 3, 4}), F32, []int64{4}, 0)
	out := run(t, x, []*Buffer{in}, 0)
	if got := bytesF32(download(t, out[0])); got[3] != 8 {
		t.Fatalf("2*4 = %v", got[3])
	}
}
