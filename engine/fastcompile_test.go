package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"torchtpu/hlo"
)

// overridesOf decodes the env_option_overrides (field 7) of serialized
// CompileOptionsProto bytes into name -> integer value, a later entry for a
// name replacing an earlier one as protobuf map parsing does. Integer values
// read as themselves and bools as 0 or 1; other kinds read as -1.
func overridesOf(t *testing.T, opts []byte) map[string]int64 {
	t.Helper()
	varint := func(b []byte) (uint64, []byte) {
		var v uint64
		for s := 0; ; s += 7 {
			require.NotEmpty(t, b, "truncated varint")
			c := b[0]
			b = b[1:]
			v |= uint64(c&0x7f) << s
			if c < 0x80 {
				return v, b
			}
		}
	}
	// fields splits a message into (field, wire type, varint or bytes) triples.
	type field struct {
		num, wire uint64
		v         uint64
		b         []byte
	}
	fields := func(b []byte) []field {
		var out []field
		for len(b) > 0 {
			var tag, v uint64
			tag, b = varint(b)
			f := field{num: tag >> 3, wire: tag & 7}
			switch f.wire {
			case 0:
				f.v, b = varint(b)
			case 1:
				require.GreaterOrEqual(t, len(b), 8)
				f.b, b = b[:8], b[8:]
			case 2:
				v, b = varint(b)
				f.b, b = b[:v], b[v:]
			default:
				t.Fatalf("wire type %d in compile options", f.wire)
			}
			out = append(out, f)
		}
		return out
	}
	got := map[string]int64{}
	for _, f := range fields(opts) {
		if f.num != 7 {
			continue
		}
		var name string
		val := int64(-1)
		for _, g := range fields(f.b) {
			switch g.num {
			case 1:
				name = string(g.b)
			case 2:
				for _, h := range fields(g.b) {
					if h.num == 2 || h.num == 3 { // bool_field, int_field
						val = int64(h.v)
					}
				}
			}
		}
		got[name] = val
	}
	return got
}

// chain returns a builder and the output of n dependent elementwise ops on a
// 4x4 parameter.
func chain(n int) (*hlo.Builder, []*hlo.Value) {
	b := hlo.NewBuilder()
	x := b.Param(hlo.T(hlo.F32, 4, 4))
	y := x
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			y = b.Add(y, x)
		} else {
			y = b.Mul(y, x)
		}
	}
	return b, []*hlo.Value{y}
}

func TestSmallProgramsCompileFast(t *testing.T) {
	t.Setenv("TORCHTPU_XLA_OPTIONS", "")
	t.Setenv("TORCHTPU_FAST_COMPILE", "")
	e := newTestEngine(t, ModeStrict)
	small, smallOut := chain(1)
	_, err := e.program(small, smallOut, nil)
	require.NoError(t, err)
	require.Equal(t, e.fastOptions, e.lastOptions, "a one-op program compiles with the small-program options")
	require.Equal(t, map[string]int64{"xla_allow_excess_precision": 0, "xla_cpu_use_fusion_emitters": 0}, overridesOf(t, e.lastOptions))

	big, bigOut := chain(smallProgramOps + 1)
	_, err = e.program(big, bigOut, nil)
	require.NoError(t, err)
	require.Equal(t, e.options, e.lastOptions, "a program over the limit compiles with the defaults")
	require.Equal(t, map[string]int64{"xla_allow_excess_precision": 0}, overridesOf(t, e.lastOptions))

	edge, edgeOut := chain(smallProgramOps)
	_, err = e.program(edge, edgeOut, nil)
	require.NoError(t, err)
	require.Equal(t, e.fastOptions, e.lastOptions, "a program of exactly the limit is small")

	for _, n := range []int{smallProgramResults, smallProgramResults + 1} {
		many := hlo.NewBuilder() // a foreach op's shape: one small op per result
		var outs []*hlo.Value
		for i := 0; i < n; i++ {
			x := many.Param(hlo.T(hlo.F32, int64(i+1)))
			outs = append(outs, many.Mul(x, x))
		}
		_, err = e.program(many, outs, nil)
		require.NoError(t, err)
		if n <= smallProgramResults {
			require.Equal(t, e.fastOptions, e.lastOptions, "%d results are few", n)
		} else {
			require.Equal(t, e.options, e.lastOptions, "%d results compile with the defaults", n)
		}
	}
}

func TestFastCompileOff(t *testing.T) {
	t.Setenv("TORCHTPU_XLA_OPTIONS", "")
	t.Setenv("TORCHTPU_FAST_COMPILE", "0")
	e := newTestEngine(t, ModeStrict)
	b, out := chain(1)
	_, err := e.program(b, out, nil)
	require.NoError(t, err)
	require.Nil(t, e.fastOptions)
	require.Equal(t, e.options, e.lastOptions)
	require.Equal(t, map[string]int64{"xla_allow_excess_precision": 0}, overridesOf(t, e.lastOptions))
}

func TestUserOptionsOverrideFastCompile(t *testing.T) {
	t.Setenv("TORCHTPU_XLA_OPTIONS", "xla_cpu_use_fusion_emitters=true,xla_cpu_prefer_vector_width=128")
	t.Setenv("TORCHTPU_FAST_COMPILE", "")
	e := newTestEngine(t, ModeStrict)
	b, out := chain(1)
	_, err := e.program(b, out, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"xla_allow_excess_precision": 0, "xla_cpu_use_fusion_emitters": 1, "xla_cpu_prefer_vector_width": 128},
		overridesOf(t, e.lastOptions), "the user's options apply over the small-program ones")
	big, bigOut := chain(smallProgramOps + 1)
	_, err = e.program(big, bigOut, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"xla_allow_excess_precision": 0, "xla_cpu_use_fusion_emitters": 1, "xla_cpu_prefer_vector_width": 128},
		overridesOf(t, e.lastOptions))
}
