package dispatch

import (
	"math"
	"slices"

	"torchtpu/hlo"
)

// fftDims checks the input's dtype (complex when wantComplex, see fftInput)
// and resolves the transformed dimensions of argument 1 against its rank.
func (c *Ctx) fftDims(wantComplex bool) ([]int64, error) {
	if _, err := fftInput(c, wantComplex); err != nil {
		return nil, err
	}
	rank := c.Meta(0).Rank()
	raw := c.Ints(1, nil)
	dims := make([]int64, len(raw))
	for i, d := range raw {
		w, err := wrapDim(d, rank)
		if err != nil {
			return nil, err
		}
		if slices.Contains(dims[:i], w) {
			return nil, Errorf("FFT dims must be unique")
		}
		dims[i] = w
	}
	return dims, nil
}

// fftScale returns the factor of PyTorch's fft_norm_mode (0: none, 1: by
// root n, 2: by n) for a signal of n points; inverse undoes the 1/n that
// StableHLO's inverse transforms apply.
func fftScale(norm, n int64, inverse bool) (float64, error) {
	f := 1.0
	switch norm {
	case 0:
	case 1:
		f = 1 / math.Sqrt(float64(n))
	case 2:
		f = 1 / float64(n)
	default:
		return 0, Errorf("Invalid normalization mode: %d", norm)
	}
	if inverse {
		f *= float64(n)
	}
	return f, nil
}

// scaled multiplies x by the constant f.
func scaled(b *hlo.Builder, x *hlo.Value, f float64) *hlo.Value {
	if f == 1 || x.T.NumElements() == 0 {
		return x
	}
	return b.Mul(x, splat(b, x, f))
}

// fftAlong transforms dimensions dims of x (at most 3) with one
// stablehlo.fft: they move last, in order, and move back after. lastLen is
// the signal length of the last of dims (it differs from the operand's size
// for IRFFT).
func fftAlong(b *hlo.Builder, x *hlo.Value, dims []int64, kind string, lastLen int64) *hlo.Value {
	r := x.T.Rank()
	perm := make([]int64, 0, r)
	for i := int64(0); i < int64(r); i++ {
		if !slices.Contains(dims, i) {
			perm = append(perm, i)
		}
	}
	perm = append(perm, dims...)
	inv := make([]int64, r)
	for i, p := range perm {
		inv[p] = int64(i)
	}
	lengths := make([]int64, len(dims))
	for i, d := range dims {
		lengths[i] = x.T.Shape[d]
	}
	lengths[len(dims)-1] = lastLen
	y := b.FFT(transposeIf(b, x, perm), kind, lengths)
	return transposeIf(b, y, inv)
}

func transposeIf(b *hlo.Builder, x *hlo.Value, perm []int64) *hlo.Value {
	for i, p := range perm {
		if int64(i) != p {
			return b.Transpose(x, perm...)
		}
	}
	return x
}

// c2cAll applies complex transforms of kind over dims, three at a time.
func c2cAll(b *hlo.Builder, x *hlo.Value, dims []int64, kind string) *hlo.Value {
	for len(dims) > 0 {
		k := min(len(dims), 3)
		chunk := dims[len(dims)-k:]
		x = fftAlong(b, x, chunk, kind, x.T.Shape[chunk[k-1]])
		dims = dims[:len(dims)-k]
	}
	return x
}

func signalSize(sizes []int64, dims []int64) int64 {
	n := int64(1)
	for _, d := range dims {
		n *= sizes[d]
	}
	return n
}

// fftInput checks the dtype of an FFT's input: the CPU kernels (pocketfft)
// take float32 and float64 and their complex types only.
func fftInput(c *Ctx, wantComplex bool) (DType, error) {
	d := c.Meta(0).DType
	if wantComplex {
		if d != Complex64 && d != Complex128 {
			return 0, Errorf("Unsupported dtype %s", scalarTypeName(d))
		}
		return d, nil
	}
	if d != Float32 && d != Float64 {
		return 0, Errorf("Unsupported dtype %s", scalarTypeName(d))
	}
	return d, nil
}

// fftR2C is _fft_r2c(self, dim, normalization, onesided): the forward
// transform of a real signal; onesided keeps the last dim's first n/2+1 bins.
func fftR2C(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	dims, err := c.fftDims(false)
	if err != nil {
		return nil, err
	}
	f, err := fftScale(c.Int(2, 0), signalSize(m.Sizes, dims), false)
	if err != nil {
		return nil, err
	}
	b, x := c.B, c.T(0)
	if len(dims) == 0 {
		return []*hlo.Value{scaled(b, b.Convert(x, hlo.ComplexOf(x.T.Elem)), f)}, nil
	}
	if !c.Bool(3, true) {
		return []*hlo.Value{scaled(b, c2cAll(b, b.Convert(x, hlo.ComplexOf(x.T.Elem)), dims, hlo.FFTForward), f)}, nil
	}
	k := min(len(dims), 3)
	last := dims[len(dims)-k:]
	y := fftAlong(b, x, last, hlo.FFTReal, m.Sizes[last[k-1]])
	y = c2cAll(b, y, dims[:len(dims)-k], hlo.FFTForward)
	return []*hlo.Value{scaled(b, y, f)}, nil
}

// fftC2C is _fft_c2c(self, dim, normalization, forward).
func fftC2C(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	dims, err := c.fftDims(true)
	if err != nil {
		return nil, err
	}
	forward := c.Bool(3, true)
	f, err := fftScale(c.Int(2, 0), signalSize(m.Sizes, dims), !forward)
	if err != nil {
		return nil, err
	}
	kind := hlo.FFTForward
	if !forward {
		kind = hlo.FFTInverse
	}
	return []*hlo.Value{scaled(c.B, c2cAll(c.B, c.T(0), dims, kind), f)}, nil
}

// fftC2R is _fft_c2r(self, dim, normalization, last_dim_size): the inverse
// transform of a onesided Hermitian signal to a real one whose last
// transformed dim has last_dim_size points.
func fftC2R(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	dims, err := c.fftDims(true)
	if err != nil {
		return nil, err
	}
	if len(dims) == 0 {
		return nil, Errorf("_fft_c2r: expected at least one dimension to transform")
	}
	n := c.Int(3, 0)
	if n < 1 {
		return nil, Errorf("Invalid number of data points (%d) specified", n)
	}
	lastDim := dims[len(dims)-1]
	out := slices.Clone(m.Sizes)
	out[lastDim] = n
	f, err := fftScale(c.Int(2, 0), signalSize(out, dims), true)
	if err != nil {
		return nil, err
	}
	b, x := c.B, c.T(0)
	// The last dim holds the first n/2+1 bins: cut or zero-pad it to that.
	half := n/2 + 1
	if have := m.Sizes[lastDim]; have > half {
		lim := slices.Clone(m.Sizes)
		lim[lastDim] = half
		x = b.Slice(x, make([]int64, m.Rank()), lim, ones(m.Rank()))
	} else if have < half {
		hi := make([]int64, m.Rank())
		hi[lastDim] = half - have
		z := make([]int64, m.Rank())
		x = b.Pad(x, b.Scalar(x.T.Elem, 0), z, hi, z)
	}
	k := min(len(dims), 3)
	x = c2cAll(b, x, dims[:len(dims)-k], hlo.FFTInverse)
	y := fftAlong(b, x, dims[len(dims)-k:], hlo.FFTInvReal, n)
	return []*hlo.Value{scaled(b, y, f)}, nil
}

func ones(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

func init() {
	def("aten::_fft_r2c", fftR2C)
	def("aten::_fft_c2c", fftC2C)
	def("aten::_fft_c2r", fftC2R)
}
