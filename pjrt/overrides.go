package pjrt

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Field numbers of xla.CompileOptionsProto.env_option_overrides (a
// map<string, OptionOverrideProto>) and of OptionOverrideProto.
const (
	compileOptsEnvOverrides = 7
	overrideString          = 1
	overrideBool            = 2
	overrideInt             = 3
	overrideDouble          = 4
)

// WithOverrides returns opts (a serialized CompileOptionsProto) with XLA debug
// options set through env_option_overrides, which the compiler applies on top
// of its defaults. (A debug_options message would instead replace every
// default, so the project never sends one.) spec is a comma-separated list of
// name=value pairs, e.g. "xla_cpu_enable_fast_math=true,xla_cpu_prefer_vector_width=256";
// true/false become bools, integers ints, other numbers doubles, anything
// else a string (enum values are given by name).
func WithOverrides(opts []byte, spec string) ([]byte, error) {
	if strings.TrimSpace(spec) == "" {
		return opts, nil
	}
	pairs := map[string]string{}
	for _, item := range strings.Split(spec, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("pjrt: XLA option %q is not name=value", item)
		}
		pairs[name] = value
	}
	names := make([]string, 0, len(pairs))
	for n := range pairs {
		names = append(names, n)
	}
	sort.Strings(names) // a canonical encoding: the bytes are part of cache keys
	out := append([]byte{}, opts...)
	for _, n := range names {
		var val []byte
		v := pairs[n]
		if b, err := strconv.ParseBool(v); err == nil && (v == "true" || v == "false") {
			var bit uint64
			if b {
				bit = 1
			}
			val = appendVarintField(val, overrideBool, bit)
		} else if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			val = appendVarintField(val, overrideInt, uint64(i))
		} else if f, err := strconv.ParseFloat(v, 64); err == nil {
			val = appendVarint(val, uint64(overrideDouble)<<3|1)
			bits := math.Float64bits(f)
			for k := 0; k < 8; k++ {
				val = append(val, byte(bits>>(8*k)))
			}
		} else {
			val = appendBytesField(val, overrideString, []byte(v))
		}
		var entry []byte
		entry = appendBytesField(entry, 1, []byte(n))
		entry = appendBytesField(entry, 2, val)
		out = appendBytesField(out, compileOptsEnvOverrides, entry)
	}
	return out, nil
}
