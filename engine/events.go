package engine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"torchtpu/hlo"
)

// Why a pending graph is launched: the flush reasons that events, metrics
// (flushes_by_reason) and recompile call sites name.
const (
	whyEagerOp     = "eager op"        // strict and debug modes: every op
	whySizeCap     = "size cap"        // fused mode: the graph reached its op cap
	whyToHost      = "to-host read"    // .cpu(), .item(), printing
	whyRuleReads   = "rule reads data" // index checks, data-dependent shapes
	whySynchronize = "synchronize"     // torch.tpu.synchronize()
	whyStepMark    = "step mark"       // optimizer.step() or torch.tpu.mark_step()
	whyTapeEnd     = "step tape end"   // fused mode: an op after the last op of a replayed step tape
	whyBackward    = "backward start"  // fused mode: the first op of a backward pass
	whyBackwardEnd = "backward end"    // fused mode: the first op after a backward pass
	whyModeSwitch  = "mode switch"     // torch.tpu.set_mode
	whyHostWrite   = "host write"      // a partial copy from host, outside fused mode
	whyStorageCopy = "storage copy"    // resize_ moving a storage
	whyColdCut     = "cold run cut"    // strict mode: an op that cannot join a cold run (cold_run.go)
)

// maxFirstOps is how many op names a graph keeps for messages.
const maxFirstOps = 3

// flushCtx describes the flush in progress, for the events and messages of
// the compile and launch it causes.
type flushCtx struct {
	reason   string
	ops      int
	first    []string
	compiled string // the compiled graph's name when a capture made the program (no flush)
	padCaps  []int64
}

// bucket names the capacities of the growing tensors the graph holds padded
// (pad.go), "" when it holds none: every size up to them runs its program.
func (f *flushCtx) bucket() string {
	if len(f.padCaps) == 0 {
		return ""
	}
	caps := make([]string, len(f.padCaps))
	for i, c := range f.padCaps {
		caps[i] = strconv.FormatInt(c, 10)
	}
	return "; bucket: growing tensors padded to capacity " + strings.Join(caps, ", ") +
		", every size up to it runs this program"
}

// site is the recompile call site of the flush: its reason and first op, or
// the compiled graph's name.
func (f *flushCtx) site() string {
	if f.compiled != "" {
		return "compiled " + f.compiled
	}
	if len(f.first) == 0 {
		return f.reason
	}
	return f.reason + " " + f.first[0]
}

// what describes the graph in one phrase for messages.
func (f *flushCtx) what() string {
	s := fmt.Sprintf("%d ops", f.ops)
	if len(f.first) > 0 {
		s += " (" + strings.Join(f.first, ", ")
		if f.ops > len(f.first) {
			s += ", ..."
		}
		s += ")"
	}
	if f.compiled != "" {
		return s + ", captured from compiled " + f.compiled
	}
	return s + ", flushed by " + f.reason
}

// setWhy names the reason of the next flush, unless a caller further out
// already named one (a rule reading data flushes through the to-host path).
func (e *Engine) setWhy(why string) {
	if e.why == "" {
		e.why = why
	}
}

// slowCompileAfter is how long a compile runs before one line says what is
// compiling, even with logs off. TORCHTPU_SLOW_COMPILE_SECONDS changes it
// (readSettings).
var slowCompileAfter time.Duration

// slowCompileSetting reads TORCHTPU_SLOW_COMPILE_SECONDS (default 2).
func slowCompileSetting() time.Duration {
	var s float64
	if _, err := fmt.Sscan(os.Getenv("TORCHTPU_SLOW_COMPILE_SECONDS"), &s); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	return 2 * time.Second
}

// slowCompileNotice starts a timer that prints what is compiling when the
// compile is still running after slowCompileAfter; the caller stops it.
func (e *Engine) slowCompileNotice(key string) *time.Timer {
	line := slowCompileLine(&e.fl, key)
	return time.AfterFunc(slowCompileAfter, func() { fmt.Fprintln(os.Stderr, line) })
}

// slowCompileLine is the line slowCompileNotice prints for the program of f
// whose cache key is key.
func slowCompileLine(f *flushCtx, key string) string {
	return fmt.Sprintf("torchtpu: compiling a program of %s (program %s); the first compile of a new graph can take a while", f.what(), key[:16])
}

// noteProgram records the explanation of a program new to this process:
// counts its reason when it was compiled (how is "compiled", or "loaded from"
// a tier), and prints it under TORCHTPU_LOG=recompiles (when it is
// not the first program of its call site) or =compiles.
func (e *Engine) noteProgram(key, how string, sum *hlo.Summary, t0 time.Time) {
	reason, detail := e.explainCompile(e.fl.site(), sum)
	if how == "compiled" {
		e.m.CompilesByReason[reason]++
	}
	e.lastReason = reason + ": " + detail
	if (reason != reasonNew && e.logs.recompiles) || e.logs.compiles {
		topic := "compile"
		if reason != reasonNew {
			topic = "recompile"
		}
		fmt.Fprintf(os.Stderr, "torchtpu: %s at %q: %s: %s%s (%s program %s of %s in %.3f s)\n",
			topic, e.fl.site(), reason, detail, e.fl.bucket(), how, key[:16], e.fl.what(), time.Since(t0).Seconds())
	}
}

// logTopics are the TORCHTPU_LOG topics the engine prints, read once.
type logTopics struct{ compiles, recompiles, fallbacks, replays bool }

func readLogTopics() logTopics {
	return logTopics{logEnabled("compiles"), logEnabled("recompiles"), logEnabled("fallbacks"), logEnabled("replays")}
}

// noteTransfer counts and traces a host<->device copy of n bytes started at t0.
func (e *Engine) noteTransfer(kind string, n int64, t0 time.Time, detail string) {
	if kind == "h2d" {
		e.m.H2DBytes += n
		e.m.H2DTransfers++
	} else {
		e.m.D2HBytes += n
		e.m.D2HTransfers++
	}
	if e.tracing() {
		e.span(kind, kind+" "+detail, t0, TraceEvent{Bytes: n})
	}
}
