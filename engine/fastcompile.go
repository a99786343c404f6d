package engine

import (
	"fmt"
	"os"

	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// smallProgramOps is the most live StableHLO ops a program may hold to be
// compiled with fastCompileSpec. Strict mode's one-op programs hold a few to a
// few dozen; fused and compiled steps hold hundreds.
const smallProgramOps = 64

// smallProgramResults is the most results such a program may have: a foreach
// op over many tensors (an optimizer's, one result per parameter) is as many
// kernels, which XLA:CPU's MLIR fusion emitters compile faster (0.55-0.85 of
// the IR emitters' time on the GPT example's and ResNet-18's 28- and
// 62-result programs), and run as fast or faster.
const smallProgramResults = 8

// fastCompileSpec are the XLA options small programs compile with: XLA:CPU's
// older IR emitters for fusions instead of its MLIR fusion emitters, the one
// option that compiled small programs faster with kernels as fast. Lowering LLVM's optimization
// level saved less and slowed some kernels (softmax); level 0 stops
// vectorizing. bench/results/compile_options.md holds the measurements.
const fastCompileSpec = "xla_cpu_use_fusion_emitters=false"

// roundingSpec keeps every op's rounding to its result dtype inside a
// program: by default XLA may drop a float16/bfloat16 result's rounding
// between two ops of one program (excess precision), so a graph of several
// ops would give other values than CPU, which rounds each op's result.
const roundingSpec = "xla_allow_excess_precision=false"

// compileOptions returns the compile options for every program and those for
// small programs: the defaults (portable ones with several devices) with
// roundingSpec, the small-program options on top unless TORCHTPU_FAST_COMPILE
// is 0, and TORCHTPU_XLA_OPTIONS over both, so that a user's choice wins.
// fast is nil when small programs get no options of their own.
func compileOptions(portable bool) (all, fast []byte, err error) {
	user := os.Getenv("TORCHTPU_XLA_OPTIONS")
	base, err := pjrt.WithOverrides(pjrt.CompileOptions(portable), roundingSpec)
	if err != nil {
		return nil, nil, err
	}
	if all, err = pjrt.WithOverrides(base, user); err != nil {
		return nil, nil, fmt.Errorf("torchtpu: TORCHTPU_XLA_OPTIONS: %v", err)
	}
	if os.Getenv("TORCHTPU_FAST_COMPILE") == "0" {
		return all, nil, nil
	}
	fast, err = pjrt.WithOverrides(base, fastCompileSpec)
	if err != nil {
		return nil, nil, err
	}
	// Overrides are a protobuf map: of two entries with one name the later
	// wins, so the user's come last.
	if fast, err = pjrt.WithOverrides(fast, user); err != nil {
		return nil, nil, fmt.Errorf("torchtpu: TORCHTPU_XLA_OPTIONS: %v", err)
	}
	return all, fast, nil
}

// optionsFor returns the compile options for the program summarized by sum:
// the small-program ones when it holds at most smallProgramOps live ops and
// smallProgramResults results.
func (e *Engine) optionsFor(sum *hlo.Summary) []byte {
	if e.fastOptions != nil && sum != nil && len(sum.Ops) <= smallProgramOps && len(sum.Results) <= smallProgramResults {
		return e.fastOptions
	}
	return e.options
}
