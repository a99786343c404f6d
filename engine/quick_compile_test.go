package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"torchtpu/dispatch"
)

// quickEnv sets the environment of a quick-compile test: no user options, a
// cache folder of its own.
func quickEnv(t *testing.T, quick string) string {
	t.Setenv("TORCHTPU_XLA_OPTIONS", "")
	t.Setenv("TORCHTPU_FAST_COMPILE", "")
	t.Setenv("TORCHTPU_QUICK_COMPILE", quick)
	dir := t.TempDir()
	t.Setenv("TORCHTPU_CACHE_DIR", dir)
	return dir
}

// squareOp runs x*x on a 3x4 storage holding 0..11 and checks the values.
type squareOp struct {
	t    *testing.T
	e    *Engine
	x    *TensorDesc
	vals []float32
}

func newSquareOp(t *testing.T, e *Engine) *squareOp {
	addr, vals := storageOf(t, e, []int64{3, 4})
	return &squareOp{t, e, &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: []int64{3, 4}, Strides: []int64{4, 1}}, vals}
}

func (s *squareOp) run() {
	s.t.Helper()
	outs, err := s.e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(s.x), tensorArg(s.x)})
	require.NoError(s.t, err)
	got := make([]byte, 48)
	require.NoError(s.t, s.e.ToHost(&TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: []int64{3, 4}, Strides: []int64{4, 1}}, got))
	for i, g := range f32s(got) {
		require.Equal(s.t, s.vals[i]*s.vals[i], g, "element %d", i)
	}
	s.e.Free(outs[0].Addr)
}

// quickCount returns how many programs of the device's strict plans are in
// the in-memory tier, and how many of them are quick first compiles.
func quickCount(e *Engine) (cached, quick int) {
	for _, p := range e.d.plans {
		if p == nil || p.key == "" {
			continue
		}
		if x, ok := e.cache.Peek(p.key); ok {
			cached++
			if x.(*program).quick != nil {
				quick++
			}
		}
	}
	return cached, quick
}

func TestQuickFirstCompileIsReplacedOnceItRunsInALaterStep(t *testing.T) {
	dir := quickEnv(t, "")
	e := newTestEngine(t, ModeStrict)
	s := newSquareOp(t, e)
	s.run()
	require.Equal(t, map[string]int64{"xla_cpu_use_fusion_emitters": 0, "xla_backend_optimization_level": 0},
		overridesOf(t, e.lastOptions), "a new one-op program compiles with LLVM's optimizations off")
	cached, quick := quickCount(e)
	require.Equal(t, 1, cached)
	require.Equal(t, 1, quick)

	s.run() // the same step: the quick program serves, nothing compiles again
	require.Zero(t, e.m.TierUps)
	require.NoError(t, e.MarkStep())
	s.run() // a later step: compiled again in the background
	require.EqualValues(t, 1, e.m.TierUps)
	require.NoError(t, e.AwaitCompiles())
	s.run() // the harvest put the usual program in its place
	_, quick = quickCount(e)
	require.Zero(t, quick)
	require.EqualValues(t, 1, e.m.GraphsCompiled, "the background compile is not a compile of a new program")

	// A new process finds the usual program on disk and compiles nothing.
	t.Setenv("TORCHTPU_CACHE_DIR", dir)
	e2 := newTestEngine(t, ModeStrict)
	s2 := newSquareOp(t, e2)
	s2.run()
	require.Zero(t, e2.m.GraphsCompiled)
	_, quick = quickCount(e2)
	require.Zero(t, quick)
}

func TestQuickProgramRunManyTimesInOneStepIsReplaced(t *testing.T) {
	quickEnv(t, "")
	e := newTestEngine(t, ModeStrict)
	s := newSquareOp(t, e)
	for range tierUpRuns - 1 {
		s.run()
	}
	require.Zero(t, e.m.TierUps)
	s.run()
	require.EqualValues(t, 1, e.m.TierUps)
	require.NoError(t, e.AwaitCompiles())
	_, quick := quickCount(e)
	require.Zero(t, quick)
}

func TestQuickCompileOnlyForSmallStrictPrograms(t *testing.T) {
	quickEnv(t, "")
	e := newTestEngine(t, ModeStrict)
	big, bigOut := chain(smallProgramOps + 1)
	_, err := e.program(big, bigOut, nil)
	require.NoError(t, err)
	require.Equal(t, e.options, e.lastOptions, "a large program compiles with the usual options")

	f := newTestEngine(t, ModeFused)
	small, smallOut := chain(1)
	_, err = f.program(small, smallOut, nil)
	require.NoError(t, err)
	require.Equal(t, f.fastOptions, f.lastOptions, "fused mode's programs compile with the usual options")

	quickEnv(t, "0")
	off := newTestEngine(t, ModeStrict)
	require.Nil(t, off.quickOptions)
	small, smallOut = chain(1)
	_, err = off.program(small, smallOut, nil)
	require.NoError(t, err)
	require.Equal(t, off.fastOptions, off.lastOptions, "TORCHTPU_QUICK_COMPILE=0 turns quick compiles off")
}
