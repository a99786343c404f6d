package engine

import (
	"fmt"
	"os"
	"time"

	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// Quick first compiles (strict mode). A first step in strict mode compiles a
// program per op, and XLA's optimizing backend spends most of that time in
// LLVM. A small program that no tier holds is therefore compiled first with
// LLVM's optimizations off (quickCompileSpec), about twice as fast to compile
// and slower to run, which a program that runs once does not notice. A
// quick program that runs again (in a later step, or tierUpRuns times) is compiled once more
// with the usual options by the compile pool, off the critical path, and
// replaces the quick one in the in-memory tier when it is done; the ops
// never wait for it. Both versions go to the persistent tiers under their
// own keys (the options are part of the key), the usual one looked up first.
// TORCHTPU_QUICK_COMPILE=0 compiles every program with the usual options.

// quickCompileSpec is added to the small-program options for a first
// compile: LLVM optimization level 0.
const quickCompileSpec = "xla_backend_optimization_level=0"

// tierUpRuns is how many launches hand a quick program to the pool when no
// step mark came between them; one launch in a later step than its first
// does too (an optimizer step marks a step), so that a first training step
// compiles nothing in the background while its own ops wait for compiles.
const tierUpRuns = 16

// quickInfo is what a quick program keeps to be compiled again.
type quickInfo struct {
	text      string
	sum       *hlo.Summary
	step      int64 // the step of its first launch
	runs      int
	submitted bool
}

// quickCompileOptions returns the options of quick first compiles: the
// small-program options with quickCompileSpec, the user's
// TORCHTPU_XLA_OPTIONS over them; nil when TORCHTPU_QUICK_COMPILE=0.
func quickCompileOptions(fast []byte) ([]byte, error) {
	if fast == nil || os.Getenv("TORCHTPU_QUICK_COMPILE") == "0" {
		return nil, nil
	}
	q, err := pjrt.WithOverrides(fast, quickCompileSpec)
	if err != nil {
		return nil, err
	}
	if q, err = pjrt.WithOverrides(q, os.Getenv("TORCHTPU_XLA_OPTIONS")); err != nil {
		return nil, fmt.Errorf("torchtpu: TORCHTPU_XLA_OPTIONS: %v", err)
	}
	return q, nil
}

// quickFirst reports whether the program summarized by sum, about to be
// compiled, is compiled quickly first: a small program in strict mode.
func (e *Engine) quickFirst(sum *hlo.Summary) bool {
	return e.quickOptions != nil && e.mode == ModeStrict && !e.capturing() &&
		(e.cp == nil || !e.cp.stopped) && e.small(sum)
}

// quickProgram finds or makes the program of module text (used and aliases
// as program() has them) for a quick first compile: the usual program from
// a persistent tier, else a quick one from a tier, else a quick compile.
func (e *Engine) quickProgram(text string, used []int, donated int, sum *hlo.Summary) (*program, error) {
	if exe := e.loadProgram(e.fullKey(text, e.fastOptions), sum); exe != nil {
		return &program{exe: exe, used: used, donated: donated}, nil
	}
	exe, err := e.compileWith(text, e.quickOptions, sum) // a quick program from a tier, or compiled and stored
	if err != nil {
		return nil, err
	}
	return &program{exe: exe, used: used, donated: donated, quick: &quickInfo{text: text, sum: sum}}, nil
}

// ranQuick counts a launch of p, the program under structural key skey, and
// hands a quick program that ran again to the pool.
func (e *Engine) ranQuick(skey string, p *program) {
	q := p.quick
	if q == nil || q.submitted {
		return
	}
	if q.runs++; q.runs == 1 {
		q.step = e.steps
	}
	if q.runs < tierUpRuns && q.step == e.steps {
		return
	}
	q.submitted = true
	e.submitTierUp(skey, q.text, p.used, p.donated, q.sum)
}

// submitTierUp hands module text to the pool to be compiled with the usual
// options; harvestJob then replaces the quick program under skey.
func (e *Engine) submitTierUp(skey, text string, used []int, donated int, sum *hlo.Summary) {
	p := e.pool()
	if p.stopped || p.inflight[skey] != nil {
		return
	}
	options := e.fastOptions
	j := &compileJob{skey: skey, key: e.fullKey(text, options), text: text, options: options, used: used,
		donated: donated, sum: sum, fl: e.fl, queued: time.Now(), done: make(chan struct{}), tierUp: true}
	p.inflight[skey] = j
	e.m.TierUps++
	p.jobs <- j
}

// harvestTierUp puts the executable of finished tier-up job j in place of the
// quick one, if the in-memory tier still holds that.
func (e *Engine) harvestTierUp(j *compileJob) {
	x, ok := e.cache.Peek(j.skey)
	if !ok || x.(*program).quick == nil {
		j.exe.Destroy()
		return
	}
	e.m.TierUpSeconds += j.end.Sub(j.start).Seconds()
	e.spanAt("compile", "compile (optimized, background)", j.start, j.end, TraceEvent{Key: j.skey, Ops: j.fl.ops, Detail: j.fl.what()})
	// The program changes in place; launches of the quick executable may still run.
	p := x.(*program)
	quick := p.exe
	p.exe, p.quick = j.exe, nil
	e.retireExecutable(quick)
}
