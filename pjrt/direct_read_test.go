package pjrt

import (
	"bytes"
	"fmt"
	"testing"
)

// readBoth reads b through the memcpy path and through the plugin's copy and
// returns both, failing when the memcpy path declines a dense buffer.
func readBoth(t *testing.T, b *Buffer) (direct, plugin []byte) {
	t.Helper()
	direct = make([]byte, b.Size())
	plugin = make([]byte, b.Size())
	b.mu.Lock()
	done, err := b.readDirect(direct)
	b.mu.Unlock()
	if err != nil || !done {
		t.Fatalf("%v%v: memcpy read: done %v, err %v", b.DType(), b.Dims(), done, err)
	}
	b.c.SetDirectReads(false)
	defer b.c.SetDirectReads(true)
	if err := b.ToHost(plugin); err != nil {
		t.Fatalf("%v%v: plugin read: %v", b.DType(), b.Dims(), err)
	}
	return direct, plugin
}

// TestDirectReadMatchesPluginCopy checks, for every dtype and a few shapes,
// that the memcpy read of a host-memory buffer gives the bytes uploaded and
// the bytes the plugin's own copy gives.
func TestDirectReadMatchesPluginCopy(t *testing.T) {
	c := newClient(t, ClientOptions{})
	if c.PlatformName() != "cpu" {
		t.Fatalf("the test plugin's platform is %q; the memcpy read is for cpu", c.PlatformName())
	}
	for _, dt := range []DType{F32, F64, F16, BF16, S8, U8, S32, S64, PRED} {
		for _, dims := range [][]int64{{}, {7}, {3, 5}, {2, 3, 4}, {0, 3}, {256, 1024}} {
			n := int64(1)
			for _, d := range dims {
				n *= d
			}
			data := sampleBytes(dt, int(n))
			b := upload(t, c, data, dt, dims, 0)
			direct, plugin := readBoth(t, b)
			if !bytes.Equal(direct, data) || !bytes.Equal(plugin, data) {
				t.Fatalf("%v%v: memcpy read equal %v, plugin read equal %v", dt, dims,
					bytes.Equal(direct, data), bytes.Equal(plugin, data))
			}
			b.Destroy()
		}
	}
}

// TestDirectReadWaitsForTheProgram reads a program's output right after the
// launch, before the program can have finished, and checks every value: the
// read waits for the buffer to be computed.
func TestDirectReadWaitsForTheProgram(t *testing.T) {
	c := newClient(t, ClientOptions{})
	const n = 512
	body := "    %p0 = stablehlo.dot_general %arg0, %arg0, contracting_dims = [1] x [0] : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>\n"
	for i := 1; i < 8; i++ {
		body += fmt.Sprintf("    %%p%d = stablehlo.dot_general %%p%d, %%arg0, contracting_dims = [1] x [0] : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>\n", i, i-1)
	}
	mlir := `module @m {
  func.func public @main(%arg0: tensor<512x512xf32>) -> tensor<512x512xf32> {
` + body + `    return %p7 : tensor<512x512xf32>
  }
}`
	x := compile(t, c, mlir, DefaultCompileOptions())
	defer x.Destroy()
	// The identity matrix: every product is the identity again.
	eye := make([]float32, n*n)
	for i := 0; i < n; i++ {
		eye[i*n+i] = 1
	}
	in := upload(t, c, f32Bytes(eye), F32, []int64{n, n}, 0)
	defer in.Destroy()
	for round := 0; round < 3; round++ {
		outs, ev, err := x.Execute([]*Buffer{in}, 0)
		if err != nil {
			t.Fatalf("Execute: %v", err)
		}
		dst := make([]byte, outs[0].Size())
		if err := outs[0].ToHost(dst); err != nil {
			t.Fatalf("ToHost: %v", err)
		}
		for i, v := range bytesF32(dst) {
			if v != eye[i] {
				t.Fatalf("round %d: [%d] = %v, want %v", round, i, v, eye[i])
			}
		}
		if err := ev.Await(); err != nil {
			t.Fatal(err)
		}
		ev.Destroy()
		direct, plugin := readBoth(t, outs[0])
		if !bytes.Equal(direct, plugin) || !bytes.Equal(direct, dst) {
			t.Fatalf("round %d: the two reads of the output differ", round)
		}
		outs[0].Destroy()
	}
}

// BenchmarkToHost compares the memcpy read of a ready buffer with the
// plugin's copy, for a scalar, 4 KiB and 1 MiB.
func BenchmarkToHost(b *testing.B) {
	c := benchClient(b)
	defer c.Close()
	for _, n := range []int{1, 1024, 262144} {
		buf, err := c.BufferFromHost(make([]byte, 4*n), F32, []int64{int64(n)}, 0)
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]byte, 4*n)
		for _, direct := range []bool{true, false} {
			name := fmt.Sprintf("f32x%d/plugin", n)
			if direct {
				name = fmt.Sprintf("f32x%d/memcpy", n)
			}
			b.Run(name, func(b *testing.B) {
				c.SetDirectReads(direct)
				b.SetBytes(int64(4 * n))
				for i := 0; i < b.N; i++ {
					if err := buf.ToHost(dst); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		c.SetDirectReads(true)
		buf.Destroy()
	}
}
