// Package engine owns the device state: storages on opaque addresses, the
// pending op graph, the flush policy of each mode, and execution through PJRT.
// Every exported method is safe for concurrent callers.
package engine

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"torchtpu/compile_cache"
	"torchtpu/dispatch"
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// Storage is the record of one device storage.
type Storage struct {
	addr    uint64
	nbytes  int64
	device  int
	shaped  bool           // dtype and shape are known
	dtype   dispatch.DType // base dtype
	shape   []int64        // base shape
	buf     *pjrt.Buffer   // concrete value, if any
	pending *hlo.Value     // value in the current graph, if any
	known   *intRange      // value range of host-written integers, if known
	seg     uint64         // the step segment that last gave it a slot (step_tape.go)
	slot    int32          // its slot in that segment
	pad     *padding       // how buf or pending is padded, if it is (pad.go)
	grown   int            // 1 + the dimension along which the value is an append, or 0 (pad.go)
	dead    bool           // removed from the engine's storages (graph_bound.go)
}

// Engine is one PJRT client and the state of its devices.
type Engine struct {
	mu          sync.Mutex
	client      *pjrt.Client
	initErr     error
	plugin      string
	addrs       *addressSpace
	storages    map[uint64]*Storage
	live        int64
	liveB       int64
	mode        Mode
	cache       *compile_cache.LRU
	tiers       *compile_cache.Tiers // TORCHTPU_CACHE_DIR and TORCHTPU_CACHE_URL, or nil
	options     []byte
	fastOptions []byte                     // options for small programs (fastcompile.go), nil when TORCHTPU_FAST_COMPILE=0
	lastOptions []byte                     // the options of the latest compile
	d           *deviceState               // the state of the device ops record for (devices.go)
	sigBuf      []byte                     // scratch for opSignature
	sigSeed     int                        // 1 + the seed argument of the op being planned (0: none), left out of its signature
	opSeeds     []seedUpload               // the seeds the running op uploaded (plan.go, srcSeed)
	layouts     [][]int64                  // the memory order of the running op's new results (layout.go)
	hostVals    map[*TensorDesc][]int64    // the running rule's declared host arguments, read (needs.go)
	fusedLog    *planMark                  // the op being planned for the fused fast path, if any
	opSerial    uint64                     // counts ops begun and ended, so that each op's numbers are its own (opNumber)
	noFusedPath bool                       // TORCHTPU_FUSED_FAST_PATH=0
	noPhaseCut  bool                       // TORCHTPU_BACKWARD_CUT=0
	noStepTape  bool                       // TORCHTPU_STEP_REPLAY=0
	padSeen     bool                       // a tensor grew by appends (pad.go): step replay is off while one is alive
	padReads    map[*TensorDesc]*hlo.Value // padded arguments the running rule reads as held (pad_ops.go)
	lengths     map[string]*lengths        // recent sizes of results that may grow, by name (Grows)
	lengthUses  uint64                     // calls of Grows, which order the names' uses
	windowSites map[hlo.Hash]*windowSite   // where windows of pending storages landed (offsets.go)
	segments    uint64                     // step segments started so far, each one's epoch (step_tape.go)
	lastProg    string                     // the cache key of the program flush launched last
	events      []inFlight                 // launched work that may still run
	forked      bool
	m           Metrics
	fused       int // op count that forces a flush in fused mode
	warned      map[string]bool
	cur         *dispatch.Ctx       // the rule running now, if any
	limit       int64               // device memory limit in bytes
	curOp       string              // the op being recorded, for error messages
	pluginID    string              // the plugin identity, a part of every cache key
	checkNaNs   bool                // TORCHTPU_CHECK_NANS=1
	checkNeeds  bool                // TORCHTPU_CHECK_NEEDS=1: an undeclared need of a rule is an error (needs.go)
	noDonate    bool                // TORCHTPU_DONATE=0
	noDefer     bool                // TORCHTPU_DEFER_COMPILED=0: compiled replays launch at once in fused mode too
	stepOpen    bool                // strict mode records as fused until the next flush (program_defer.go)
	dumpWarned  bool                // TORCHTPU_DUMP_DIR could not be written
	hcBase      pjrt.HostCacheStats // host cache counters at the last metrics reset
	evictedBase int64               // in-memory tier evictions at the last metrics reset
	hostCache   bool                // the plugin's large host blocks are cached (hostcache.go)
	dev         devices             // the device ops record for, and the others' pending state (devices.go)
	padOn       bool                // results may be padded (pad.go, TORCHTPU_PAD)
	padMin      int64               // the smallest capacity of a padded result (TORCHTPU_PAD_MIN)

	capture        *capture        // the program being captured, if any (capture.go)
	captureAborted string          // why the last capture stopped early
	pins           map[uint64]int  // storages graph programs bind, by address (graph_capture.go)
	orphans        map[uint64]bool // pinned storages PyTorch has freed
	programs       programTable
	tr             tracer                // the event buffer of torch.tpu.trace (trace.go)
	why            string                // the reason of the next flush (events.go)
	fl             flushCtx              // the flush in progress
	sites          map[string][]*progSig // programs compiled per call site (recompile.go)
	lastReason     string                // the explanation of the latest new program
	logs           logTopics             // TORCHTPU_LOG topics
	cp             *compilePool          // background compiles of one-op programs (compile_pool.go), started on first use
	maps           *mapBudget            // the process's memory mappings against the in-memory tier (map_budget.go)
	noColdRuns     bool                  // TORCHTPU_COLD_RUNS=0: strict mode compiles every cold op in the foreground
	rerun          *coldRun              // the cold run the op being recorded starts again (cold_run.go)
}

// ErrNoRule reports that an op has no rule and must run on CPU.
var ErrNoRule = errors.New("no rule")

// ResizeError asks the caller to resize out= arguments and call again.
type ResizeError struct {
	Sizes [][]int64
	Modes []int // how to resize each (dispatch.OutResizeMode)
}

func (e *ResizeError) Error() string { return "out= arguments need resizing" }

// New returns an engine with no plugin loaded; Init loads one.
func New() *Engine {
	e := &Engine{
		storages: map[uint64]*Storage{},
		cache:    compile_cache.NewLRU(programsInMemory),
		fused:    20000,
		initErr:  errors.New("torchtpu: the device is not initialized (no PJRT plugin loaded; set TORCHTPU_PLUGIN)"),
	}
	e.m = newMetrics()
	e.readSettings()
	e.d = e.dev.state(0)
	return e
}

// ReadSettings reads the engine's TORCHTPU_* settings from the environment
// again. New reads them when the library loads, from the environment the
// process started with; the bridge calls ReadSettings at initialization,
// once Go's environment follows the C library's, so a setting a script put
// in os.environ before importing torch takes effect. Once Init has
// succeeded it does nothing: from then on the API changes the settings.
func (e *Engine) ReadSettings() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client == nil {
		e.readSettings()
	}
}

func (e *Engine) readSettings() {
	e.logs = readLogTopics()
	e.limit = memoryLimit()
	e.checkNaNs = os.Getenv("TORCHTPU_CHECK_NANS") == "1"
	e.noDonate = os.Getenv("TORCHTPU_DONATE") == "0"
	e.noFusedPath = os.Getenv("TORCHTPU_FUSED_FAST_PATH") == "0"
	e.noPhaseCut = os.Getenv("TORCHTPU_BACKWARD_CUT") == "0"
	e.noStepTape = os.Getenv("TORCHTPU_STEP_REPLAY") == "0"
	e.noDefer = os.Getenv("TORCHTPU_DEFER_COMPILED") == "0"
	e.padOn, e.padMin = padSettings()
	e.mode = ModeStrict
	if m, err := ParseMode(os.Getenv("TORCHTPU_MODE")); err == nil {
		e.mode = m
	}
	embedAllScalars = os.Getenv("TORCHTPU_EMBED_SCALARS") == "1"
	slowCompileAfter = slowCompileSetting()
	e.maps = newMapBudget(programsInMemory)
}

// programsInMemory is the in-memory tier's capacity, until the process's
// memory mappings run short (map_budget.go).
const programsInMemory = 4096

// Init loads the PJRT plugin at path and creates a client with cpuDevices
// CPU devices (for the CPU plugin). It is idempotent once it has succeeded.
func (e *Engine) Init(path string, cpuDevices int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client != nil {
		return nil
	}
	addrs, err := newAddressSpace()
	if err != nil {
		e.initErr = err
		return err
	}
	quietPluginLogs()
	p, err := pjrt.Load(path)
	if err != nil {
		e.initErr = fmt.Errorf("torchtpu: cannot load the PJRT plugin %q (chosen by TORCHTPU_PLUGIN): %v", path, err)
		return e.initErr
	}
	c, err := p.NewClient(pjrt.ClientOptions{CPUDeviceCount: cpuDevices})
	if err != nil {
		e.initErr = fmt.Errorf("torchtpu: the PJRT plugin %q (chosen by TORCHTPU_PLUGIN) failed to create a client: %v", path, err)
		return e.initErr
	}
	e.addrs, e.client, e.plugin, e.initErr = addrs, c, path, nil
	e.cacheHostBlocks(p, c.PlatformName())
	hlo.WideF32Sums = c.PlatformName() == "cpu"
	// With several devices, programs are portable: one executable runs on any of them.
	if e.options, e.fastOptions, err = compileOptions(c.DeviceCount() > 1); err != nil {
		e.initErr = err
		return err
	}
	e.pluginID = e.pluginIdentity()
	e.checkNeeds = os.Getenv("TORCHTPU_CHECK_NEEDS") == "1"
	e.noColdRuns = os.Getenv("TORCHTPU_COLD_RUNS") == "0"
	e.tiers = compile_cache.OpenTiers(compile_cache.DirFromEnv(os.LookupEnv), os.Getenv("TORCHTPU_CACHE_URL"))
	return nil
}

// ready returns the init error, or an error after fork.
func (e *Engine) ready() error {
	if e.forked {
		return errors.New("torchtpu: the tpu device cannot be used in a forked child process (DataLoader workers must not touch tpu tensors)")
	}
	return e.initErr
}

// MarkForked makes every later call fail: a forked child has no Go runtime threads.
func (e *Engine) MarkForked() { e.forked = true }

// DeviceCount returns the addressable device count (0 before Init).
func (e *Engine) DeviceCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client == nil {
		return 0
	}
	return e.client.DeviceCount()
}

// DeviceInfo describes device dev: the plugin's platform name and version
// and the kind the plugin gives the device.
type DeviceInfo struct {
	Platform string `json:"platform"`
	Version  string `json:"platform_version"`
	Kind     string `json:"kind"`
}

// Device returns the description of device dev.
func (e *Engine) Device(dev int) (DeviceInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client == nil {
		return DeviceInfo{}, errors.New("the device runtime is not initialized")
	}
	kind, err := e.client.DeviceKind(dev)
	if err != nil {
		return DeviceInfo{}, err
	}
	return DeviceInfo{Platform: e.client.PlatformName(), Version: e.client.PlatformVersion(), Kind: kind}, nil
}

// Alloc reserves a storage of nbytes on device and returns its address.
func (e *Engine) Alloc(nbytes int64, device int) (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready(); err != nil {
		return 0, err
	}
	if nbytes < 0 {
		return 0, fmt.Errorf("torchtpu: cannot allocate %d bytes", nbytes)
	}
	return e.newStorage(nbytes, device)
}

// OOMError reports that an allocation would pass the device memory limit.
type OOMError struct{ Requested, Allocated, Limit int64 }

func (e *OOMError) Error() string {
	return fmt.Sprintf("torchtpu: out of memory on tpu: tried to allocate %d bytes with %d bytes allocated and a limit of %d bytes (set TORCHTPU_MEMORY_LIMIT to change it)",
		e.Requested, e.Allocated, e.Limit)
}

func (e *Engine) newStorage(nbytes int64, device int) (uint64, error) {
	if e.liveB+nbytes > e.limit {
		return 0, &OOMError{nbytes, e.liveB, e.limit}
	}
	addr, err := e.addrs.alloc(nbytes)
	if err != nil {
		return 0, err
	}
	e.storages[addr] = &Storage{addr: addr, nbytes: nbytes, device: device}
	e.live++
	e.liveB += nbytes
	e.m.PeakBytes = max(e.m.PeakBytes, e.liveB)
	return addr, nil
}

// Free releases the storage at addr. A pending value nobody can read any
// more stops being an output of the graph.
func (e *Engine) Free(addr uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st, ok := e.storages[addr]
	if !ok {
		return
	}
	if e.pins[addr] > 0 {
		e.orphans[addr] = true // a graph still binds it: freed when the graph is
		return
	}
	delete(e.storages, addr)
	st.dead = true
	e.live--
	e.liveB -= st.nbytes
	if !e.keepForReplay(st) {
		e.dropBuffer(st.buf)
	}
	st.buf, st.pending = nil, nil
	e.addrs.release(addr, st.nbytes)
}

// dropBuffer destroys b now, or after the next flush when the pending graph reads it.
func (e *Engine) dropBuffer(b *pjrt.Buffer) {
	if b == nil {
		return
	}
	if g := e.graphReading(b); g != nil {
		g.retired = append(g.retired, b)
		return
	}
	b.Destroy()
}

// LiveStorages returns the number of live storages; MemoryAllocated their bytes.
func (e *Engine) LiveStorages() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.live
}

// MaxMemoryAllocated returns the peak of MemoryAllocated since the last reset.
func (e *Engine) MaxMemoryAllocated() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m.PeakBytes
}

// ResetPeakMemory restarts the peak at the current allocation.
func (e *Engine) ResetPeakMemory() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m.PeakBytes = e.liveB
}

// MemoryLimit returns the device memory limit in bytes.
func (e *Engine) MemoryLimit() int64 { return e.limit }

// MarkStep marks a step boundary: in fused mode the pending graph is launched.
func (e *Engine) MarkStep() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready(); err != nil {
		return err
	}
	if c := e.capture; c != nil && c.byStorage {
		return nil // a step inside a graph capture is part of the program
	}
	e.why = whyStepMark
	return e.flushAll()
}

// AutogradBoundary is called when ops start (backward true) or stop arriving
// from inside an autograd backward pass. In fused mode it launches the
// pending graphs without waiting for them, as a step mark does: the forward
// then runs on the device while the host records the backward, and the
// backward while it records the optimizer step. The boundaries fall at the
// same ops every step, so each part hits the program cache like a whole step.
// TORCHTPU_BACKWARD_CUT=0 turns the cut off.
func (e *Engine) AutogradBoundary(backward bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if (e.mode != ModeFused && !e.inColdRun()) || e.noPhaseCut || e.capture != nil || e.ready() != nil || e.d.g.programs > 0 {
		return nil // a capture (torch.compile) keeps its ops in one program, a compiled step too
	}
	e.why = whyBackward
	if !backward {
		e.why = whyBackwardEnd
	}
	return e.flushAll()
}

// MemoryAllocated returns the bytes of all live storages.
func (e *Engine) MemoryAllocated() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.liveB
}

func (e *Engine) storage(addr uint64) (*Storage, error) {
	st, ok := e.storages[addr]
	if !ok {
		return nil, fmt.Errorf("torchtpu: no live storage at address 0x%x", addr)
	}
	return st, nil
}

// storageOf returns the storage the tensor t views. A storage sliced from
// another (`untyped_storage()[i:j]`) starts inside it: t is then rebased
// onto the containing storage, its byte distance added to its offset, which
// must be a whole number of t's elements.
func (e *Engine) storageOf(t *TensorDesc) (*Storage, error) {
	if st, ok := e.storages[t.Addr]; ok {
		return st, nil
	}
	for _, st := range e.storages {
		if t.Addr <= st.addr || t.Addr >= st.addr+uint64(st.nbytes) {
			continue
		}
		delta, size := int64(t.Addr-st.addr), int64(t.DType.Size())
		if size == 0 || delta%size != 0 {
			return nil, fmt.Errorf("torchtpu: a %s tensor starting %d bytes into a storage is not aligned to its elements", t.DType, delta)
		}
		t.Addr, t.Offset = st.addr, t.Offset+delta/size
		return st, nil
	}
	return nil, fmt.Errorf("torchtpu: no live storage at address 0x%x", t.Addr)
}

// SetDefaultFloat follows torch.set_default_dtype: the rules read the default
// floating dtype, and the fast paths' plans recorded under another default are
// dropped, since their signatures do not hold it.
func (e *Engine) SetDefaultFloat(d dispatch.DType) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	changed, err := dispatch.SetDefaultFloat(d)
	if err != nil || !changed {
		return err
	}
	for _, s := range e.dev.states {
		s.plans.reset()
	}
	return nil
}
