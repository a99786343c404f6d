package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"time"

	"torchtpu/compile_cache"
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// graph is the pending work of the device: ops recorded into one builder,
// whose parameters are device buffers.
type graph struct {
	b       *hlo.Builder
	params  []*pjrt.Buffer
	paramOf map[*pjrt.Buffer]*hlo.Value
	pending []*Storage     // storages given a pending value, in order
	retired []*pjrt.Buffer // destroyed after the next execution is launched
	extra   []*hlo.Value   // values wanted as extra outputs (reads to host)
	ops     int
}

func newGraph() *graph {
	return &graph{b: hlo.NewBuilder(), paramOf: map[*pjrt.Buffer]*hlo.Value{}}
}

// param returns the parameter fed by buffer b, adding it on first use.
func (g *graph) param(b *pjrt.Buffer, t hlo.Type) *hlo.Value {
	if v, ok := g.paramOf[b]; ok {
		return v
	}
	v := g.b.Param(t)
	g.params = append(g.params, b)
	g.paramOf[b] = v
	return v
}

// setPending gives st a new pending value.
func (e *Engine) setPending(st *Storage, v *hlo.Value) {
	if st.pending == nil {
		e.g.pending = append(e.g.pending, st)
	}
	st.pending, st.known = v, nil
}

type scalarKey struct {
	elem hlo.Elem
	bits uint64
}

// Scalar returns a rank-0 runtime input holding v: the device buffer for each
// distinct value is made once and kept, so a changing learning rate neither
// recompiles nor re-uploads.
func (e *Engine) Scalar(v float64, elem hlo.Elem) *hlo.Value {
	k := scalarKey{elem, math.Float64bits(v)}
	buf, ok := e.scalars[k]
	if !ok {
		if len(e.scalars) >= 4096 {
			for key, b := range e.scalars {
				e.dropBuffer(b)
				delete(e.scalars, key)
			}
		}
		var err error
		buf, err = e.client.BufferFromHost(encodeScalar(v, elem), pjrtType(elem), nil, 0)
		if err != nil {
			panic(fmt.Errorf("uploading a scalar: %w", err))
		}
		e.m.H2DBytes += int64(elem.Bits() / 8)
		e.scalars[k] = buf
	}
	return e.g.param(buf, hlo.T(elem))
}

// ScalarInt implements dispatch.Reader: an exact integer runtime input.
// Unlike Scalar the buffer is not cached (seeds change every call).
func (e *Engine) ScalarInt(v int64, elem hlo.Elem) *hlo.Value {
	buf, err := e.client.BufferFromHost(encodeInt(v, elem), pjrtType(elem), nil, 0)
	if err != nil {
		panic(fmt.Errorf("uploading a scalar: %w", err))
	}
	e.m.H2DBytes += int64(elem.Bits() / 8)
	e.g.retired = append(e.g.retired, buf)
	return e.g.param(buf, hlo.T(elem))
}

// Int64Tensor implements dispatch.Reader: host integers as a runtime input.
func (e *Engine) Int64Tensor(vals []int64, shape []int64) *hlo.Value {
	raw := make([]byte, 8*len(vals))
	for i, v := range vals {
		copy(raw[8*i:], encodeInt(v, hlo.S64))
	}
	buf, err := e.client.BufferFromHost(raw, pjrt.S64, shape, 0)
	if err != nil {
		panic(fmt.Errorf("uploading indices: %w", err))
	}
	e.m.H2DBytes += int64(len(raw))
	e.g.retired = append(e.g.retired, buf)
	return e.g.param(buf, hlo.T(hlo.S64, shape...))
}

// flush lowers the pending graph to one module, compiles it (once per
// distinct module) and launches it; results replace the storages' values.
// It returns the buffers of g.extra, which the caller must destroy.
func (e *Engine) flush() error {
	_, err := e.flushExtra()
	return err
}

func (e *Engine) flushExtra() ([]*pjrt.Buffer, error) {
	g := e.g
	e.g = newGraph()
	defer func() {
		for _, b := range g.retired {
			b.Destroy()
		}
	}()
	var outs []*hlo.Value
	var dst []*Storage
	for _, st := range g.pending {
		if st.pending != nil {
			outs = append(outs, st.pending)
			dst = append(dst, st)
			st.pending = nil
		}
	}
	outs = append(outs, g.extra...)
	if len(outs) == 0 {
		return nil, nil
	}
	// With TORCHTPU_CHECK_NANS=1 in debug mode, each float or complex output
	// also yields a flag saying whether it holds a NaN.
	var nanChecked []*Storage
	if e.mode == ModeDebug && e.checkNaNs {
		for i, st := range dst {
			if st.dtype.IsFloat() || st.dtype.IsComplex() {
				v := outs[i]
				isNaN := g.b.Compare(hlo.NE, v, v)
				dims := make([]int64, v.T.Rank())
				for i := range dims {
					dims[i] = int64(i)
				}
				outs = append(outs, g.b.Reduce(isNaN, g.b.Scalar(hlo.Pred, 0), hlo.ReduceOr, dims...))
				nanChecked = append(nanChecked, st)
			}
		}
	}
	text, used := g.b.Module(outs)
	exe, err := e.executable(text)
	if err != nil {
		return nil, err
	}
	args := make([]*pjrt.Buffer, len(used))
	for i, p := range used {
		args[i] = g.params[p]
	}
	results, ev, err := exe.Execute(args, 0)
	if err != nil {
		return nil, fmt.Errorf("torchtpu: executing a graph of %d ops: %w", g.ops, err)
	}
	e.m.Executions++
	for i, st := range dst {
		e.dropBuffer(st.buf)
		st.buf = results[i]
	}
	// Keep the completion events of work in flight; drop the finished ones.
	e.events = append(e.events, ev)
	for len(e.events) > 1 && e.events[0].IsReady() {
		e.events[0].Destroy()
		e.events = e.events[1:]
	}
	if e.mode == ModeDebug {
		if err := ev.Await(); err != nil {
			return nil, fmt.Errorf("torchtpu: a graph of %d ops failed: %w", g.ops, err)
		}
	}
	flags := results[len(results)-len(nanChecked):]
	results = results[:len(results)-len(nanChecked)]
	var nanErr error
	for _, f := range flags {
		b := make([]byte, 1)
		if err := f.ToHost(b); err == nil && b[0] != 0 && nanErr == nil {
			nanErr = &NaNError{Op: e.curOp}
		}
		f.Destroy()
	}
	if nanErr != nil {
		for _, b := range results[len(dst):] {
			b.Destroy()
		}
		return nil, nanErr
	}
	return results[len(dst):], nil
}

// executable returns the compiled program for module text, compiling it on a
// miss. Within a process every key part but the module text is fixed, so the
// in-memory tier is keyed by the text itself; the full key over all named
// parts (DESIGN.md) is computed on a miss, where it names the program.
func (e *Engine) executable(text string) (*pjrt.Executable, error) {
	if x, ok := e.cache.Get(text); ok {
		e.m.CacheHits++
		return x.(*pjrt.Executable), nil
	}
	e.m.CacheMisses++
	key := compile_cache.Key(
		compile_cache.Part{Name: "module", Value: text},
		compile_cache.Part{Name: "options", Value: string(e.options)},
		compile_cache.Part{Name: "plugin", Value: e.pluginID},
		compile_cache.Part{Name: "version", Value: Version},
	)
	if exe := e.loadFromDisk(key); exe != nil {
		e.m.DiskHits++
		e.cache.Put(text, exe)
		return exe, nil
	}
	t0 := time.Now()
	exe, err := e.client.Compile(text, e.options)
	if err != nil {
		if os.Getenv("TORCHTPU_DUMP_FAILED") != "" {
			fmt.Fprintln(os.Stderr, text)
		}
		return nil, fmt.Errorf("torchtpu: compiling a graph failed (program %s): %w", key[:16], err)
	}
	e.m.CompileSeconds += time.Since(t0).Seconds()
	e.m.GraphsCompiled++
	e.cache.Put(text, exe)
	e.storeToDisk(key, exe)
	return exe, nil
}

// loadFromDisk returns the executable stored under key in TORCHTPU_CACHE_DIR,
// or nil. A corrupt or unloadable entry is a miss plus a warning.
func (e *Engine) loadFromDisk(key string) *pjrt.Executable {
	if e.disk == nil {
		return nil
	}
	data, err := e.disk.Load(key)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "torchtpu: warning: compile cache entry %s is unusable (%v); recompiling\n", key[:16], err)
		}
		return nil
	}
	exe, err := e.client.DeserializeExecutable(data)
	if err != nil {
		fmt.Fprintf(os.Stderr, "torchtpu: warning: compile cache entry %s does not load (%v); recompiling\n", key[:16], err)
		return nil
	}
	return exe
}

func (e *Engine) storeToDisk(key string, exe *pjrt.Executable) {
	if e.disk == nil {
		return
	}
	data, err := exe.Serialize()
	if err == nil {
		err = e.disk.Store(key, data)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "torchtpu: warning: cannot write compile cache entry %s: %v\n", key[:16], err)
	}
}

// Version is the project's version; it is part of every cache key.
const Version = "0.1.0"

func (e *Engine) pluginIdentity() string {
	major, minor := e.client.Plugin().APIVersion()
	id := fmt.Sprintf("%s|%d.%d|%s|%s", e.plugin, major, minor, e.client.PlatformName(), e.client.PlatformVersion())
	if fi, err := os.Stat(e.plugin); err == nil {
		id += fmt.Sprintf("|%d|%d", fi.Size(), fi.ModTime().UnixNano())
	}
	return id
}

// Synchronize flushes pending work and waits for the device to finish.
func (e *Engine) Synchronize() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready(); err != nil {
		return err
	}
	if err := e.flush(); err != nil {
		return err
	}
	var first error
	for _, ev := range e.events {
		if err := ev.Await(); err != nil && first == nil {
			first = err
		}
		ev.Destroy()
	}
	e.events = nil
	return first
}

// NaNError reports an op whose result holds a NaN (TORCHTPU_CHECK_NANS=1, debug mode).
type NaNError struct{ Op string }

func (e *NaNError) Error() string {
	return fmt.Sprintf("torchtpu: %s produced a NaN (TORCHTPU_CHECK_NANS=1 in debug mode)", e.Op)
}
