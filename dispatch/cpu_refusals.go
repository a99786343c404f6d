package dispatch

import "strings"

// cpuRefusal is what CPU raises for a promoting binary op whose result
// dtype has no CPU kernel.
type cpuRefusal struct {
	kernel  string           // the kernel CPU names: "hypot_cpu"
	refuses func(DType) bool // the result dtypes without a kernel
	typeErr string           // raised as TypeError instead, when set
}

func notFloat(d DType) bool          { return !d.IsFloat() }
func notFloatOrComplex(d DType) bool { return !d.IsFloat() && !d.IsComplex() }
func complexOnly(d DType) bool       { return d.IsComplex() }
func complexOrBool(d DType) bool     { return d.IsComplex() || d == Bool }

// halfOrComplex refuses what zeta's kernel lacks after integers and bools were promoted to the default float.
func halfOrComplex(d DType) bool { return d == Float16 || d == BFloat16 || d.IsComplex() }

// cpuRefusals lists, by op base name, the binary ops whose CPU kernels
// exist for some result dtypes only: there tpu raises CPU's error, where it
// would otherwise compute (hypot of ints) or fail to build (copysign of
// complex values).
var cpuRefusals = map[string]cpuRefusal{
	"hypot":               {"hypot_cpu", notFloat, ""},
	"logaddexp":           {"logaddexp_cpu", notFloatOrComplex, ""},
	"logaddexp2":          {"logaddexp2_cpu", notFloat, ""},
	"nextafter":           {"nextafter_cpu", notFloat, ""},
	"igamma":              {"igamma_cpu", notFloat, ""},
	"igammac":             {"igammac_cpu", notFloat, ""},
	"special_zeta":        {"zeta_cpu", halfOrComplex, ""},
	"xlogy":               {"xlogy_cpu", complexOnly, ""},
	"special_xlog1py":     {"xlog1py_cpu", complexOnly, ""},
	"copysign":            {"copysign_cpu", complexOnly, ""},
	"atan2":               {"atan2_cpu", complexOnly, ""},
	"remainder":           {"remainder_cpu", complexOrBool, ""},
	"fmod":                {"fmod_cpu", complexOrBool, ""},
	"floor_divide":        {"div_floor_cpu", complexOnly, ""},
	"bitwise_and":         {"bitwise_and_cpu", complexOnly, ""},
	"bitwise_or":          {"bitwise_or_cpu", complexOnly, ""},
	"bitwise_xor":         {"bitwise_xor_cpu", complexOnly, ""},
	"bitwise_left_shift":  {"lshift_cpu", complexOnly, ""},
	"__lshift__":          {"lshift_cpu", complexOnly, ""},
	"bitwise_right_shift": {"rshift_cpu", complexOnly, ""},
	"__rshift__":          {"rshift_cpu", complexOnly, ""},
	"maximum":             {"", complexOnly, "maximum not implemented for complex tensors."},
	"minimum":             {"", complexOnly, "minimum not implemented for complex tensors."},
}

// refusedByCPU returns CPU's error when the running op's result dtype d has
// no CPU kernel (cpuRefusals), else nil.
func refusedByCPU(op string, d DType) error {
	base := ruleBaseOf(op)
	r, ok := cpuRefusals[base]
	if !ok {
		r, ok = cpuRefusals[strings.TrimSuffix(base, "_")] // in-place hypot_
	}
	if ok && r.refuses(d) {
		if r.typeErr != "" {
			return TypeErrorf("%s", r.typeErr)
		}
		return notImplemented(r.kernel, d)
	}
	return nil
}
