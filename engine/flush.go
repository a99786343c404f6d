package engine

import (
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"torchtpu/compile_cache"
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// program is a compiled graph and the builder positions of the parameters
// it takes, in order.
type program struct {
	exe     *pjrt.Executable
	fill    *hostFill // set instead of exe for a program made from host bytes (host_fill.go)
	used    []int
	donated int // parameters the program takes over (its donation pairs)
}

// Destroy implements compile_cache.Entry: the in-memory tier lets go of p.
// Its executable is destroyed once nothing holds it (a compiled graph or a
// launch being prepared may), by the plugin package's cleanup.
func (p *program) Destroy() {}

// run returns what launches p.
func (p *program) run() runner {
	if p.fill != nil {
		return p.fill
	}
	return p.exe
}

// flush lowers the pending graph to one module, compiles it (once per
// distinct module) and launches it; results replace the storages' values.
func (e *Engine) flush() error {
	_, err := e.flushExtra()
	return err
}

// flushExtra is flush that also returns the buffers of g.extra, which the
// caller must destroy.
//
// A segment that replayed a step tape to its end launches the tape's program
// instead (step_replay.go); one that recorded its ops keeps its tape.
//
// The program is found by the graph's structural hash (hlo.Hash), computed as
// ops were recorded: a repeated step prints no text. Text is rendered only on
// a miss, to compile or to find the program on disk. A storage the graph
// overwrites donates its old buffer to its new value when the two have the
// same type, so parameters and optimizer state update in place.
func (e *Engine) flushExtra() ([]*pjrt.Buffer, error) {
	defer e.closeStep()
	if err := e.syncInCapture(); err != nil {
		return nil, err
	}
	if s := e.d.seg; s != nil && s.tape != nil {
		if len(e.d.g.extra) == 0 {
			if launched, err := e.launchReplay(s); launched {
				return nil, err
			}
		}
		e.departTape(s, departFlush)
	}
	s := e.d.seg
	e.d.seg = nil
	g := e.d.g
	e.d.g = newGraph()
	why := e.why
	e.why = ""
	defer func() {
		pjrt.DestroyBuffers(g.retired)
	}()
	outs, dst := g.outputs()
	if len(outs) == 0 {
		return nil, nil
	}
	if why == "" {
		why = whySynchronize
	}
	tFlush := time.Now()
	e.fl = flushCtx{reason: why, ops: g.ops, first: g.first, padCaps: g.padCaps}
	e.m.Flushes[why]++
	defer e.span("flush", "flush: "+why, tFlush, TraceEvent{Ops: g.ops, Reason: why})
	if stepped, err := e.launchSteps(g, outs, dst); stepped {
		return nil, err
	}
	outs, nanFlags := e.nanChecks(g, dst, outs)
	aliases := e.donations(g, dst, outs)
	e.notePeak(dst, outs, aliases)
	prog, err := e.program(g.b, outs, aliases)
	if err != nil {
		return nil, err
	}
	results, err := e.launchGraph(g, prog, dst, len(aliases))
	if err != nil {
		return nil, err
	}
	if nanFlags == 0 {
		e.saveTape(s, g, prog, dst, aliases)
	}
	flags := results[len(results)-nanFlags:]
	results = results[:len(results)-nanFlags]
	if err := e.readNaNFlags(flags); err != nil {
		for _, b := range results[len(dst):] {
			b.Destroy()
		}
		return nil, err
	}
	return results[len(dst):], nil
}

// outputs returns the graph's outputs: the pending value of each storage
// given one (dst, whose pending values it clears), then the extra outputs.
func (g *graph) outputs() (outs []*hlo.Value, dst []*Storage) {
	for _, st := range g.pending {
		if st.pending != nil {
			outs = append(outs, st.pending)
			dst = append(dst, st)
			st.pending = nil
		}
	}
	return append(outs, g.extra...), dst
}

// nanChecks adds, with TORCHTPU_CHECK_NANS=1 in debug mode, a flag output
// per float or complex storage output saying whether it holds a NaN; it
// returns the outputs and the number of flags at their end.
func (e *Engine) nanChecks(g *graph, dst []*Storage, outs []*hlo.Value) ([]*hlo.Value, int) {
	if e.mode != ModeDebug || !e.checkNaNs {
		return outs, 0
	}
	n := 0
	for i, st := range dst {
		if st.dtype.IsFloat() || st.dtype.IsComplex() {
			v := outs[i]
			isNaN := g.b.Compare(hlo.NE, v, v)
			dims := make([]int64, v.T.Rank())
			for i := range dims {
				dims[i] = int64(i)
			}
			outs = append(outs, g.b.Reduce(isNaN, g.b.Scalar(hlo.Pred, 0), hlo.ReduceOr, dims...))
			n++
		}
	}
	return outs, n
}

// readNaNFlags reads and destroys the NaN flags, returning a NaNError for
// the op being recorded when one is set.
func (e *Engine) readNaNFlags(flags []*pjrt.Buffer) error {
	var nanErr error
	for _, f := range flags {
		b := make([]byte, 1)
		if err := f.ToHost(b); err == nil && b[0] != 0 && nanErr == nil {
			nanErr = &NaNError{Op: e.curOp}
		}
		f.Destroy()
	}
	return nanErr
}

// notePeak counts the peak memory of a launch: while the program runs, an
// overwritten storage whose buffer was not donated holds two buffers, the
// old one (alive until the launch retires it) and the new result, as a
// device would.
func (e *Engine) notePeak(dst []*Storage, outs []*hlo.Value, aliases map[int]int) {
	donatedOut := make([]bool, len(outs))
	for _, o := range aliases {
		donatedOut[o] = true
	}
	transient := int64(0)
	for i, st := range dst {
		if st.buf != nil && !donatedOut[i] {
			transient += st.nbytes
		}
	}
	e.m.PeakBytes = max(e.m.PeakBytes, e.liveB+transient)
}

// launchGraph runs the flushed graph g's program: each storage in dst takes
// its result buffer; the results after them are returned with the rest.
func (e *Engine) launchGraph(g *graph, prog *program, dst []*Storage, donated int) ([]*pjrt.Buffer, error) {
	args := make([]*pjrt.Buffer, len(prog.used))
	for i, p := range prog.used {
		args[i] = g.params[p]
	}
	var results []*pjrt.Buffer
	l := launch{key: e.lastProg, ops: g.ops, device: e.dev.cur, donated: donated}
	ev, err := e.execute(l, prog.run(), args, func(rs []*pjrt.Buffer) []*pjrt.Buffer {
		results = rs
		replaced := make([]*pjrt.Buffer, 0, len(dst))
		for i, st := range dst {
			replaced = append(replaced, st.buf)
			st.buf = rs[i]
		}
		return replaced
	})
	if err != nil {
		return nil, fmt.Errorf("torchtpu: executing a graph of %d ops: %w", g.ops, err)
	}
	if e.mode == ModeDebug {
		if err := ev.Await(); err != nil {
			return nil, fmt.Errorf("torchtpu: a graph of %d ops failed: %w", g.ops, err)
		}
	}
	return results, nil
}

// donations returns, for each storage in dst whose current buffer is a
// parameter of g of the same type as its new value, that parameter's index
// and the output's. The old buffer is dropped after the launch anyway (a
// storage owns its buffer alone), so the program may write into it.
// TORCHTPU_DONATE=0 turns donation off.
func (e *Engine) donations(g *graph, dst []*Storage, outs []*hlo.Value) map[int]int {
	if e.noDonate {
		return nil
	}
	var aliases map[int]int
	for i, st := range dst {
		if st.buf == nil {
			continue
		}
		p, ok := g.paramOf[st.buf]
		if !ok || !p.T.Equal(outs[i].T) {
			continue
		}
		if aliases == nil {
			aliases = map[int]int{}
		}
		aliases[p.ParamIndex()] = i
	}
	return aliases
}

// program returns the compiled program of the function returning outs,
// looked up by its structural hash; on a miss the module is printed and
// found on disk or compiled.
func (e *Engine) program(b *hlo.Builder, outs []*hlo.Value, aliases map[int]int) (*program, error) {
	h := b.Key(outs, aliases)
	var raw [16]byte
	for i := 0; i < 8; i++ {
		raw[i], raw[8+i] = byte(h.Lo>>(8*i)), byte(h.Hi>>(8*i))
	}
	skey := "s:" + hex.EncodeToString(raw[:])
	e.lastProg = skey
	if !e.takeBack(skey) { // a job no worker started is compiled here, now
		if err := e.awaitProgram(skey); err != nil {
			return nil, err
		}
	}
	if x, ok := e.cache.Get(skey); ok {
		e.m.CacheHits++
		return x.(*program), nil
	}
	e.m.CacheMisses++
	text, used := b.ModuleAliased(outs, aliases)
	sum := b.Summarize(outs)
	if p := e.fillProgram(skey, text, sum, used); p != nil {
		return p, nil
	}
	exe, err := e.compileText(text, sum)
	if err != nil {
		return nil, err
	}
	p := &program{exe: exe, used: used, donated: len(aliases)}
	e.cache.Put(skey, p)
	return p, nil
}

// executable returns the compiled program for module text (summarized by
// sum), compiling it on a miss; the in-memory tier is keyed by the text itself.
func (e *Engine) executable(text string, sum *hlo.Summary) (*pjrt.Executable, error) {
	if x, ok := e.cache.Get(text); ok {
		e.m.CacheHits++
		return x.(*program).exe, nil
	}
	e.m.CacheMisses++
	exe, err := e.compileText(text, sum)
	if err != nil {
		return nil, err
	}
	e.cache.Put(text, &program{exe: exe})
	return exe, nil
}

// compileText loads the program for module text from the persistent tiers
// (disk, then remote), or compiles it and stores it there. The full key over all named parts (DESIGN.md) names
// the program in both tiers.
func (e *Engine) compileText(text string, sum *hlo.Summary) (*pjrt.Executable, error) {
	return e.compileWith(text, e.optionsFor(sum), sum)
}

// compileWith is compileText with the given compile options (replicated
// programs have their own).
func (e *Engine) compileWith(text string, options []byte, sum *hlo.Summary) (*pjrt.Executable, error) {
	return e.compileAs(text, options, sum, true)
}

// compileAs is compileWith; a compile in the foreground keeps the pool's
// workers from starting jobs while it runs.
func (e *Engine) compileAs(text string, options []byte, sum *hlo.Summary, foreground bool) (*pjrt.Executable, error) {
	key := e.fullKey(text, options)
	t0 := time.Now()
	if err := e.maps.admit(e.cache); err != nil {
		return nil, err
	}
	if exe := e.loadProgram(key, sum); exe != nil {
		return exe, nil
	}
	e.dumpModule(key, text)
	slow := e.slowCompileNotice(key)
	e.lastOptions = options
	done := func() {}
	if foreground {
		done = e.foreground()
	}
	exe, err := e.client.Compile(text, options)
	done()
	slow.Stop()
	if err != nil {
		if os.Getenv("TORCHTPU_DUMP_FAILED") != "" {
			fmt.Fprintln(os.Stderr, text)
		}
		return nil, fmt.Errorf("torchtpu: compiling a graph failed (program %s): %w", key[:16], err)
	}
	e.m.CompileSeconds += time.Since(t0).Seconds()
	e.m.GraphsCompiled++
	e.noteProgram(key, "compiled", sum, t0)
	e.span("compile", "compile", t0, TraceEvent{Key: e.lastProg, Ops: e.fl.ops, Reason: e.lastReason, Detail: e.fl.what()})
	e.storeCompiled(key, exe)
	return exe, nil
}

// fullKey returns the key of module text compiled with options in the
// persistent tiers: a hash over every named part (DESIGN.md).
func (e *Engine) fullKey(text string, options []byte) string {
	return compile_cache.Key(
		compile_cache.Part{Name: "module", Value: text},
		compile_cache.Part{Name: "options", Value: string(options)},
		compile_cache.Part{Name: "plugin", Value: e.pluginID},
		compile_cache.Part{Name: "version", Value: Version},
	)
}

// loadProgram returns the program stored under key in the persistent tiers,
// or nil, and notes a load in the events and logs.
func (e *Engine) loadProgram(key string, sum *hlo.Summary) *pjrt.Executable {
	t0 := time.Now()
	exe, from := e.loadStored(key)
	if exe == nil {
		return nil
	}
	e.noteProgram(key, "loaded from "+from, sum, t0)
	e.span("load", "load from "+from, t0, TraceEvent{Key: e.lastProg, Ops: e.fl.ops, Reason: e.lastReason})
	return exe
}
