package pjrt

import (
	"testing"
	"time"
)

// scaleModule doubles a 9M-element vector (36 MiB, above the cache's 32 MiB
// floor) and adds one.
const scaleModule = `module @scale {
  func.func public @main(%x: tensor<9437184xf32>) -> (tensor<9437184xf32>) {
    %two = stablehlo.constant dense<2.0> : tensor<9437184xf32>
    %one = stablehlo.constant dense<1.0> : tensor<9437184xf32>
    %0 = stablehlo.multiply %x, %two : tensor<9437184xf32>
    %1 = stablehlo.add %0, %one : tensor<9437184xf32>
    return %1 : tensor<9437184xf32>
  }
}`

// TestHostCache checks that with the plugin's large allocations cached, freed
// device buffers are reused (hits) and every value read back is the one
// written or computed, and that ReleaseHostCache empties the free lists.
func TestHostCache(t *testing.T) {
	c := newClient(t, ClientOptions{})
	if c.PlatformName() != "cpu" {
		t.Skipf("the host cache is for CPU plugins, not %q", c.PlatformName())
	}
	if err := c.Plugin().CacheHostAllocations(1 << 30); err != nil {
		t.Fatal(err)
	}
	x := compile(t, c, scaleModule, DefaultCompileOptions())
	const n = 9 << 20
	before := ReadHostCacheStats()
	for round := 0; round < 4; round++ {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(round*7 + i%1000)
		}
		in, err := c.BufferFromHost(f32Bytes(v), F32, []int64{n}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytesF32(download(t, in)); got[n-1] != v[n-1] || got[0] != v[0] {
			t.Fatalf("round %d: uploaded %v…%v, read back %v…%v", round, v[0], v[n-1], got[0], got[n-1])
		}
		outs, ev, err := x.Execute([]*Buffer{in}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := ev.Await(); err != nil {
			t.Fatal(err)
		}
		ev.Destroy()
		got := bytesF32(download(t, outs[0]))
		for i := 0; i < n; i += 4099 {
			if want := 2*v[i] + 1; got[i] != want {
				t.Fatalf("round %d: out[%d] = %v, want %v", round, i, got[i], want)
			}
		}
		outs[0].Destroy()
		in.Destroy()
	}
	// A destroyed buffer's memory is freed once the plugin's last use of it
	// retires, which may be a moment later.
	after := ReadHostCacheStats()
	for i := 0; i < 200 && after.LiveBytes > before.LiveBytes; i++ {
		time.Sleep(10 * time.Millisecond)
		after = ReadHostCacheStats()
	}
	t.Logf("host cache: %+v → %+v", before, after)
	if after.Hits-before.Hits < 4 {
		t.Errorf("host cache hits grew by %d over 4 rounds of 36 MiB buffers, want at least 4", after.Hits-before.Hits)
	}
	if after.FreeBytes < 36<<20 {
		t.Errorf("free bytes %d after the buffers were destroyed, want at least 36 MiB", after.FreeBytes)
	}
	ReleaseHostCache()
	if s := ReadHostCacheStats(); s.FreeBytes != 0 {
		t.Errorf("free bytes %d after ReleaseHostCache (%+v)", s.FreeBytes, s)
	}
}
