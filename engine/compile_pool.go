package engine

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// The compile pool compiles one-op programs off the critical path (cold
// runs, cold_run.go). A job is a module text, its options and the key it has
// in every tier; a worker loads it from the persistent tiers, or compiles it
// and writes it there.
// The engine, under its lock, adds finished programs to the in-memory tier
// and its metrics (harvest), and waits for a job only when an op needs its
// program now (awaitProgram). Workers touch no engine state.

// compileJob is one program handed to the pool.
type compileJob struct {
	skey    string       // the structural key (the in-memory tier's)
	key     string       // the full key (the persistent tiers')
	text    string       // the module
	options []byte       // its compile options
	used    []int        // the builder positions of the parameters it takes
	donated int          // its donation pairs
	sum     *hlo.Summary // what a recompile is explained by
	fl      flushCtx     // the op it was made for, for messages and events

	state              atomic.Int32 // jobQueued, jobRunning or jobTaken
	queued, start, end time.Time
	exe                *pjrt.Executable
	stored             *storedLookup // what the persistent tiers held, when they were asked
	looked             time.Duration // the time asking them took
	err                error
	done               chan struct{} // closed when the job has finished or was dropped
}

// A job's states: a worker moves a queued job to running; the engine may
// take a queued job back to compile it itself (takeBack).
const (
	jobQueued int32 = iota
	jobRunning
	jobTaken
)

// compilePool runs compile jobs on a few goroutines.
type compilePool struct {
	jobs     chan *compileJob
	inflight map[string]*compileJob // by structural key, until harvested (engine lock)
	store    sync.Mutex             // serializes writes to the persistent tiers
	stop     chan struct{}
	wg       sync.WaitGroup
	stopped  bool
	busy     atomic.Int32 // foreground compiles running: workers start no job meanwhile
}

// compileWorkers returns how many goroutines compile in the background:
// TORCHTPU_COMPILE_WORKERS, or one per core (at most 4): workers run at the
// lowest priority, so the thread recording ops keeps its core.
func compileWorkers() int {
	if s := os.Getenv("TORCHTPU_COMPILE_WORKERS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
		fmt.Fprintf(os.Stderr, "torchtpu: warning: TORCHTPU_COMPILE_WORKERS=%q is not a positive number; using the default\n", s)
	}
	return max(1, min(4, runtime.NumCPU()))
}

// pool returns the engine's compile pool, starting it on first use.
func (e *Engine) pool() *compilePool {
	if e.cp != nil {
		return e.cp
	}
	p := &compilePool{jobs: make(chan *compileJob, 1<<16), inflight: map[string]*compileJob{}, stop: make(chan struct{})}
	for range compileWorkers() {
		p.wg.Add(1)
		go e.compileWorker(p)
	}
	e.cp = p
	return p
}

// compileWorker runs jobs until the pool stops; a job queued when it stops
// is dropped (its done channel closes with no executable).
func (e *Engine) compileWorker(p *compilePool) {
	defer p.wg.Done()
	// The worker keeps a thread of its own at the lowest priority, so that
	// its compiles use the cores the thread recording ops leaves idle.
	runtime.LockOSThread()
	lowerPriority()
	for {
		select {
		case <-p.stop:
			return
		case j := <-p.jobs:
			select {
			case <-p.stop:
				if j.state.CompareAndSwap(jobQueued, jobTaken) {
					close(j.done)
				}
				return
			default:
			}
			for p.busy.Load() > 0 && !p.stopping() {
				time.Sleep(2 * time.Millisecond) // the critical path compiles: leave it the cores
			}
			if !j.state.CompareAndSwap(jobQueued, jobRunning) {
				continue // the engine took it back and closed done
			}
			j.start = time.Now()
			if j.err = e.maps.admit(e.cache); j.err != nil {
				j.end = time.Now()
				close(j.done)
				continue
			}
			if e.tiers != nil { // a program another process compiled loads here, off the critical path too
				p.store.Lock()
				data, from, asked := e.tiers.Lookup(j.key)
				p.store.Unlock()
				l := e.loadFound(j.key, data, from, asked) // workers load in parallel
				j.stored, j.exe, j.looked = &l, l.exe, time.Since(j.start)
			}
			if j.exe == nil {
				j.exe, j.err = e.client.Compile(j.text, j.options)
			}
			j.end = time.Now()
			if j.err == nil && e.tiers != nil && j.stored.exe == nil {
				if data, err := j.exe.Serialize(); err == nil {
					p.store.Lock()
					e.tiers.Store(j.key, data)
					p.store.Unlock()
				}
			}
			close(j.done)
		}
	}
}

// submit hands the module text (from a builder whose parameters in order
// are used, summarized by sum) to the pool's workers under structural key skey.
func (e *Engine) submit(skey, text string, used []int, donated int, sum *hlo.Summary, fl flushCtx) {
	if e.fillProgram(skey, text, sum, used) != nil {
		return
	}
	p := e.pool()
	if p.stopped || p.inflight[skey] != nil {
		return
	}
	options := e.optionsFor(sum)
	j := &compileJob{skey: skey, key: e.fullKey(text, options), text: text, options: options, used: used,
		donated: donated, sum: sum, fl: fl, queued: time.Now(), done: make(chan struct{})}
	e.dumpModule(j.key, text)
	p.inflight[skey] = j
	e.m.BackgroundCompiles++
	p.jobs <- j
}

// inflight returns the pool's job for skey, or nil.
func (e *Engine) inflight(skey string) *compileJob {
	if e.cp == nil {
		return nil
	}
	return e.cp.inflight[skey]
}

// compiling reports whether the pool holds a job for structural key skey.
func (e *Engine) compiling(skey string) bool {
	return e.cp != nil && e.cp.inflight[skey] != nil
}

// takeBack removes the pool's job for skey if no worker has started it,
// so that the caller compiles the program now instead of waiting behind the
// queue; it reports whether it did.
func (e *Engine) takeBack(skey string) bool {
	if e.cp == nil {
		return false
	}
	j := e.cp.inflight[skey]
	if j == nil || !j.state.CompareAndSwap(jobQueued, jobTaken) {
		return false
	}
	close(j.done)
	delete(e.cp.inflight, skey)
	e.m.BackgroundCompiles--
	return true
}

// awaitProgram waits for the pool's job for skey, if any, and harvests it:
// afterwards the program is in the in-memory tier unless its compile failed
// (the error is returned) or the pool stopped first. A job no worker has
// started is compiled here, now (compileJob).
func (e *Engine) awaitProgram(skey string) error {
	j := e.inflight(skey)
	if j == nil {
		return nil
	}
	if e.takeBack(skey) {
		return e.compileJob(j, true)
	}
	select {
	case <-j.done:
	default:
		t0 := time.Now()
		<-j.done
		e.m.CompileWaits++
		e.m.CompileWaitSeconds += time.Since(t0).Seconds()
		e.span("compile wait", "wait for a background compile", t0, TraceEvent{Key: skey, Ops: j.fl.ops})
	}
	e.harvestJob(j)
	if j.err != nil {
		return fmt.Errorf("torchtpu: compiling a graph failed (program %s): %w", j.key[:16], j.err)
	}
	return nil
}

// compileJob compiles job j, taken back from the pool, on the calling thread
// into the in-memory tier; on the critical path (foreground) workers start
// nothing meanwhile.
func (e *Engine) compileJob(j *compileJob, foreground bool) error {
	saved := e.fl
	e.fl = j.fl
	defer func() { e.fl = saved }()
	exe, err := e.compileAs(j.text, j.options, j.sum, foreground)
	if err != nil {
		return err
	}
	e.cache.Put(j.skey, &program{exe: exe, used: j.used, donated: j.donated})
	return nil
}

// harvest takes every finished job into the in-memory tier and the metrics.
func (e *Engine) harvest() {
	if e.cp == nil {
		return
	}
	for _, j := range e.cp.inflight {
		select {
		case <-j.done:
			e.harvestJob(j)
		default:
		}
	}
}

// harvestJob takes finished job j: its program goes into the in-memory tier
// and its compile into the metrics, events and logs as a compile of its op.
func (e *Engine) harvestJob(j *compileJob) {
	delete(e.cp.inflight, j.skey)
	if j.exe == nil {
		return // dropped at stop, or failed: an op needing it compiles it again
	}
	if _, ok := e.cache.Peek(j.skey); ok {
		j.exe.Destroy()
		return
	}
	saved := e.fl
	e.fl = j.fl
	if j.stored != nil {
		e.countLookup(*j.stored, j.looked)
	}
	if l := j.stored; l != nil && l.exe != nil {
		e.m.BackgroundCompiles-- // loaded, not compiled
		e.noteProgram(j.key, "loaded from "+l.tier, j.sum, j.start)
		e.spanAt("load", "load from "+l.tier+" (background)", j.start, j.end, TraceEvent{Key: j.skey, Ops: j.fl.ops, Reason: e.lastReason})
	} else {
		e.m.CompileSeconds += j.end.Sub(j.start).Seconds()
		e.m.GraphsCompiled++
		e.noteProgram(j.key, "compiled", j.sum, j.start)
		e.spanAt("compile", "compile (background)", j.start, j.end, TraceEvent{Key: j.skey, Ops: j.fl.ops, Reason: e.lastReason, Detail: j.fl.what()})
	}
	e.fl = saved
	e.cache.Put(j.skey, &program{exe: j.exe, used: j.used, donated: j.donated})
}

// AwaitCompiles waits until every program handed to the pool has compiled,
// and takes them into the in-memory tier and the metrics.
func (e *Engine) AwaitCompiles() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cp == nil {
		return nil
	}
	var first error
	for len(e.cp.inflight) > 0 {
		for skey := range e.cp.inflight {
			if err := e.awaitProgram(skey); err != nil && first == nil {
				first = err
			}
			break
		}
	}
	return first
}

// StopCompiles stops the compile pool before the process exits. With a
// persistent tier on, queued jobs still compile, so that
// the next process finds every program; without one they are dropped.
// Running ones finish. Ops after it compile in the foreground.
func (e *Engine) StopCompiles() {
	e.mu.Lock()
	p := e.cp
	if p == nil || p.stopped {
		e.mu.Unlock()
		return
	}
	if e.tiers != nil {
		e.mu.Unlock()
		e.AwaitCompiles()
		e.mu.Lock()
	}
	p.stopped = true
	close(p.stop)
	e.mu.Unlock()
	p.wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		select {
		case j := <-p.jobs:
			if j.state.CompareAndSwap(jobQueued, jobTaken) {
				close(j.done)
			}
		default:
			e.harvest()
			return
		}
	}
}

// stopping reports whether the pool has been told to stop.
func (p *compilePool) stopping() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

// foreground marks a compile on the critical path until the returned
// function is called: workers start no job meanwhile (the cores may be
// hyperthreads of one core, where even the lowest priority slows it).
func (e *Engine) foreground() func() {
	if e.cp == nil {
		return func() {}
	}
	e.cp.busy.Add(1)
	return func() { e.cp.busy.Add(-1) }
}
