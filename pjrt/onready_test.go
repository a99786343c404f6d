package pjrt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOnReady checks that a completion callback registered on an execution's
// event runs once, after the launch, with no error, and that the values are
// there by then.
func TestOnReady(t *testing.T) {
	c := newClient(t, ClientOptions{})
	x := compile(t, c, addModule, DefaultCompileOptions())
	a := []float32{1, 2, 3, 4, 5, 6}
	ba := upload(t, c, f32Bytes(a), F32, []int64{2, 3}, 0)
	for range 20 {
		start := time.Now().UnixNano()
		outs, ev, err := x.Execute([]*Buffer{ba, ba}, 0)
		require.NoError(t, err)
		type done struct {
			at  int64
			err error
		}
		ch := make(chan done, 2)
		require.NoError(t, ev.OnReady(func(at int64, err error) { ch <- done{at, err} }))
		var d done
		select {
		case d = <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("the callback did not run")
		}
		require.NoError(t, d.err)
		require.GreaterOrEqual(t, d.at, start, "completion time before the launch")
		require.Equal(t, []float32{2, 4, 6, 8, 10, 12}, bytesF32(download(t, outs[0])))
		ev.Destroy()
		outs[0].Destroy()
		require.Len(t, ch, 0, "the callback ran twice")
	}
}
