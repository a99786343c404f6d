package pjrt

import (
	"math"
	"strings"
	"testing"
)

// These tests record what the plugin does with StableHLO's bounded dynamic
// dimensions, the evidence behind how growing tensors are held (DESIGN.md,
// "Growing tensors"): inside a program a padded value given a size by
// set_dimension_size reduces, normalizes and contracts over that size alone,
// but a value of dynamic shape cannot cross a program's boundary as a
// storage would need. A failure here means that evidence changed.

// boundedRows is x (rows 8 x 4) given n rows by set_dimension_size.
const boundedRows = `tensor<?x4xf32, #stablehlo.bounds<8, ?>>`

// boundedModule returns a module of x: tensor<8x4xf32> and n: tensor<i32>
// whose body (using %d, x with n rows, and BOUNDED for its type) returns results.
func boundedModule(results, body string) string {
	return strings.ReplaceAll(`module @bounded {
  func.func public @main(%x: tensor<8x4xf32>, %n: tensor<i32>) -> (`+results+`) {
    %d = stablehlo.set_dimension_size %x, %n, dim = 0 : (tensor<8x4xf32>, tensor<i32>) -> BOUNDED
`+body+`
  }
}`, "BOUNDED", boundedRows)
}

// boundedRun runs module on x = 0.1, 0.2, ... (rows of 4) and n, returning its outputs.
func boundedRun(t *testing.T, c *Client, module string, n int32) []*Buffer {
	t.Helper()
	x := compile(t, c, module, DefaultCompileOptions())
	v := make([]float32, 32)
	for i := range v {
		v[i] = float32(i+1) / 10
	}
	xb := upload(t, c, f32Bytes(v), F32, []int64{8, 4}, 0)
	nb := upload(t, c, []byte{byte(n), 0, 0, 0}, S32, nil, 0)
	return run(t, x, []*Buffer{xb, nb}, 0)
}

// rowValue is x[r][col] as boundedRun fills it.
func rowValue(r, col int) float64 { return float64(float32(4*r+col+1) / 10) }

func near(got float32, want float64) bool {
	return math.Abs(float64(got)-want) <= 1e-5*math.Max(1, math.Abs(want))
}

func TestBoundedDimensionReductionsSeeOnlyTheSize(t *testing.T) {
	c := newClient(t, ClientOptions{})
	sum := boundedModule("tensor<4xf32>", `    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%d init: %z) applies stablehlo.add across dimensions = [0] : (BOUNDED, tensor<f32>) -> tensor<4xf32>
    return %s : tensor<4xf32>`)
	// exp(x - max) summed over the rows, the softmax denominator; the rows past n hold the largest values.
	softmax := boundedModule("tensor<4xf32>", `    %lo = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %m = stablehlo.reduce(%d init: %lo) applies stablehlo.maximum across dimensions = [0] : (BOUNDED, tensor<f32>) -> tensor<4xf32>
    %mb = stablehlo.broadcast_in_dim %m, dims = [1] : (tensor<4xf32>) -> BOUNDED
    %e0 = stablehlo.subtract %d, %mb : BOUNDED
    %e = stablehlo.exponential %e0 : BOUNDED
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [0] : (BOUNDED, tensor<f32>) -> tensor<4xf32>
    return %s : tensor<4xf32>`)
	dot := boundedModule("tensor<4x4xf32>", `    %s = stablehlo.dot_general %d, %d, contracting_dims = [0] x [0] : (BOUNDED, BOUNDED) -> tensor<4x4xf32>
    return %s : tensor<4x4xf32>`)
	for _, n := range []int32{1, 3, 8} {
		got := bytesF32(download(t, boundedRun(t, c, sum, n)[0]))
		gotSoft := bytesF32(download(t, boundedRun(t, c, softmax, n)[0]))
		gotDot := bytesF32(download(t, boundedRun(t, c, dot, n)[0]))
		for col := 0; col < 4; col++ {
			want, mx, den := 0.0, math.Inf(-1), 0.0
			for r := 0; r < int(n); r++ {
				want += rowValue(r, col)
				mx = math.Max(mx, rowValue(r, col))
			}
			for r := 0; r < int(n); r++ {
				den += math.Exp(rowValue(r, col) - mx)
			}
			if !near(got[col], want) || !near(gotSoft[col], den) {
				t.Errorf("n=%d column %d: sum %v softmax denominator %v, want %v and %v", n, col, got[col], gotSoft[col], want, den)
			}
			for col2 := 0; col2 < 4; col2++ {
				w := 0.0
				for r := 0; r < int(n); r++ {
					w += rowValue(r, col) * rowValue(r, col2)
				}
				if !near(gotDot[4*col+col2], w) {
					t.Errorf("n=%d: dot [%d,%d] = %v, want %v", n, col, col2, gotDot[4*col+col2], w)
				}
			}
		}
	}
}

func TestBoundedDimensionConcatenateGrowsTheSize(t *testing.T) {
	c := newClient(t, ClientOptions{})
	m := boundedModule("tensor<4xf32>, tensor<i32>", `    %o = stablehlo.constant dense<100.0> : tensor<1x4xf32>
    %g = stablehlo.concatenate %d, %o, dim = 0 : (BOUNDED, tensor<1x4xf32>) -> tensor<?x4xf32, #stablehlo.bounds<9, ?>>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%g init: %z) applies stablehlo.add across dimensions = [0] : (tensor<?x4xf32, #stablehlo.bounds<9, ?>>, tensor<f32>) -> tensor<4xf32>
    %k = stablehlo.get_dimension_size %g, dim = 0 : (tensor<?x4xf32, #stablehlo.bounds<9, ?>>) -> tensor<i32>
    return %s, %k : tensor<4xf32>, tensor<i32>`)
	outs := boundedRun(t, c, m, 3)
	sum, size := bytesF32(download(t, outs[0])), download(t, outs[1])
	if size[0] != 4 || size[1] != 0 {
		t.Errorf("get_dimension_size after appending a row to 3: %v, want 4", size)
	}
	for col := 0; col < 4; col++ {
		want := 100 + rowValue(0, col) + rowValue(1, col) + rowValue(2, col)
		if !near(sum[col], want) {
			t.Errorf("column %d: %v, want %v", col, sum[col], want)
		}
	}
}

func TestBoundedDimensionCannotCrossAProgramBoundary(t *testing.T) {
	c := newClient(t, ClientOptions{})
	// A result of dynamic shape reports its bound as its dimensions, yet copies out only its size's
	// elements: the engine could not keep it as a padded buffer of the bound.
	out := boundedRun(t, c, boundedModule("BOUNDED", `    return %d : BOUNDED`), 3)[0]
	if got := out.Dims(); len(got) != 2 || got[0] != 8 || got[1] != 4 {
		t.Errorf("a result with 3 of 8 rows reports dims %v, expected the bound [8 4]", got)
	}
	if err := out.ToHost(make([]byte, 8*4*4)); err == nil {
		t.Error("copying a result with 3 of 8 rows into a buffer of the bound succeeded: a dynamic result may now serve as a padded storage")
	}
	small := make([]byte, 3*4*4)
	if err := out.ToHost(small); err != nil {
		t.Errorf("copying the 3 rows of a dynamic result: %v", err)
	} else if v := bytesF32(small); !near(v[11], rowValue(2, 3)) {
		t.Errorf("the 3 rows of a dynamic result: %v", v)
	}
	// Nor does it bind to a parameter of the bound's static shape: the plugin stores its size beside the data.
	static := compile(t, c, `module @static {
  func.func public @main(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>) {
    return %x : tensor<8x4xf32>
  }
}`, DefaultCompileOptions())
	if outs, ev, err := static.Execute([]*Buffer{out}, 0); err == nil {
		err = ev.Await()
		ev.Destroy()
		for _, o := range outs {
			o.Destroy()
		}
		if err == nil {
			t.Error("a result with 3 of 8 rows bound to a tensor<8x4xf32> parameter: a dynamic result may now serve as a padded storage")
		}
	}
	// A parameter of dynamic shape does not compile: a program cannot take such a value as an input.
	param := strings.ReplaceAll(`module @bounded {
  func.func public @main(%d: BOUNDED) -> (tensor<4xf32>) {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%d init: %z) applies stablehlo.add across dimensions = [0] : (BOUNDED, tensor<f32>) -> tensor<4xf32>
    return %s : tensor<4xf32>
  }
}`, "BOUNDED", boundedRows)
	if x, err := c.Compile(param, DefaultCompileOptions()); err == nil {
		x.Destroy()
		t.Error("a parameter of bounded dynamic shape compiled: programs may now take dynamic inputs")
	} else if !strings.Contains(err.Error(), "PadToStatic") {
		t.Logf("a parameter of bounded dynamic shape fails to compile: %v", err)
	}
}
