package engine

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"torchtpu/dispatch"
)

// device is an engine with helpers to move float64 matrices to and fro.
type device struct {
	t *testing.T
	e *Engine
}

func newDevice(t *testing.T) *device {
	return &device{t: t, e: newTestEngine(t, ModeStrict)}
}

// put uploads the row-major values of m (or of data with the given sizes).
func (d *device) put(m mat.Matrix) dispatch.Arg {
	r, c := m.Dims()
	data := make([]float64, 0, r*c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			data = append(data, m.At(i, j))
		}
	}
	return d.putData(data, int64(r), int64(c))
}

func (d *device) putData(data []float64, sizes ...int64) dispatch.Arg {
	addr, err := d.e.Alloc(int64(8*len(data)), 0)
	require.NoError(d.t, err)
	d.t.Cleanup(func() { d.e.Free(addr) })
	desc := &TensorDesc{Addr: addr, DType: dispatch.Float64, Sizes: sizes, Strides: contiguousStrides(sizes)}
	buf := make([]byte, 8*len(data))
	for i, x := range data {
		binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(x))
	}
	require.NoError(d.t, d.e.FromHost(desc, buf))
	return tensorArg(desc)
}

// op runs a rule and returns its outputs as float64 slices with their sizes
// (integer outputs are converted).
func (d *device) op(name string, args ...dispatch.Arg) []opResult {
	d.t.Helper()
	outs, err := d.e.Op(name, args)
	require.NoError(d.t, err, "%s", name)
	res := make([]opResult, len(outs))
	for i, o := range outs {
		desc := &TensorDesc{Addr: o.Addr, DType: o.DType, Sizes: o.Sizes, Strides: contiguousStrides(o.Sizes)}
		buf := make([]byte, o.NBytes)
		require.NoError(d.t, d.e.ToHost(desc, buf))
		d.e.Free(o.Addr)
		n := int(numel(o.Sizes))
		vals := make([]float64, n)
		for k := 0; k < n; k++ {
			switch o.DType {
			case dispatch.Float64:
				vals[k] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*k:]))
			case dispatch.Int64:
				vals[k] = float64(int64(binary.LittleEndian.Uint64(buf[8*k:])))
			case dispatch.Int32:
				vals[k] = float64(int32(binary.LittleEndian.Uint32(buf[4*k:])))
			default:
				d.t.Fatalf("%s: output %d has dtype %s", name, i, o.DType)
			}
		}
		res[i] = opResult{sizes: o.Sizes, vals: vals}
	}
	return res
}

type opResult struct {
	sizes []int64
	vals  []float64
}

// dense views a 2-D result as a gonum matrix.
func (r opResult) dense() *mat.Dense {
	return mat.NewDense(int(r.sizes[0]), int(r.sizes[1]), r.vals)
}
