package pjrt

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// settleLive collects until LiveExecutables stops changing and returns it.
func settleLive() int64 {
	prev := int64(-1)
	for range 100 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		now := LiveExecutables()
		if now == prev {
			return now
		}
		prev = now
	}
	return prev
}

func processMaps(t *testing.T) int {
	t.Helper()
	n := MemoryMappings()
	if n < 0 {
		t.Fatal("reading /proc/self/maps failed (the plugin runs on Linux only)")
	}
	return n
}

// distinctModule returns a distinct one-op module for each k, so that every
// compile makes code of its own.
func distinctModule(k int) string {
	return strings.ReplaceAll(fmt.Sprintf(`module @scale {
  func.func public @main(%%a: tensor<Nxf32>) -> (tensor<Nxf32>) {
    %%c = stablehlo.constant dense<%d.0> : tensor<Nxf32>
    %%0 = stablehlo.multiply %%a, %%c : tensor<Nxf32>
    return %%0 : tensor<Nxf32>
  }
}`, k), "N", fmt.Sprint(k))
}

func TestUnreachableExecutablesAreDestroyed(t *testing.T) {
	c := newClient(t, ClientOptions{})
	base := settleLive()
	maps0 := processMaps(t)
	const n = 40
	for k := 1; k <= n; k++ {
		x, err := c.Compile(distinctModule(k), nil)
		if err != nil {
			t.Fatalf("Compile(%d): %v", k, err)
		}
		in := upload(t, c, f32Bytes(make([]float32, k)), F32, []int64{int64(k)}, 0)
		outs, ev, err := x.Execute([]*Buffer{in}, 0)
		if err != nil {
			t.Fatalf("Execute(%d): %v", k, err)
		}
		_ = ev.Await()
		ev.Destroy()
		DestroyBuffers(outs)
		// x is dropped here, never destroyed explicitly.
	}
	if got := LiveExecutables(); got < base+n/2 {
		t.Logf("live %d right after compiling %d (base %d): a collection ran meanwhile", got, n, base)
	}
	grown := processMaps(t) - maps0
	if got := settleLive(); got != base {
		t.Fatalf("live executables after collection = %d, want %d", got, base)
	}
	freed := maps0 + grown - processMaps(t)
	t.Logf("%d executables: %d mappings while alive, %d freed by collection", n, grown, freed)
	if grown > n && freed < grown/2 {
		t.Fatalf("collection freed %d of the %d mappings %d executables took", freed, grown, n)
	}
}

func TestDestroyedExecutableIsNotCollectedAgain(t *testing.T) {
	c := newClient(t, ClientOptions{})
	base := settleLive()
	x, err := c.Compile(addModule, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := LiveExecutables(); got != base+1 {
		t.Fatalf("live after compile = %d, want %d", got, base+1)
	}
	x.Destroy()
	x.Destroy()
	if got := LiveExecutables(); got != base {
		t.Fatalf("live after Destroy = %d, want %d", got, base)
	}
	if got := settleLive(); got != base {
		t.Fatalf("live after collecting a destroyed executable = %d, want %d", got, base)
	}
}

func TestExecutableOfClosedClientIsCollectedSafely(t *testing.T) {
	c, err := loadPlugin(t).NewClient(ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := settleLive()
	if _, err := c.Compile(addModule, nil); err != nil {
		t.Fatal(err)
	}
	c.Close() // the executable, dropped above, outlives its client
	if got := settleLive(); got != base {
		t.Fatalf("live after collecting a closed client's executable = %d, want %d", got, base)
	}
}
