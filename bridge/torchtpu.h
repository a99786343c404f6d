/*
 * torchtpu.h is the C ABI between the C++ shim (csrc/) and the Go engine.
 *
 * Rules: only integers, doubles, plain structs and caller-owned buffers cross
 * this boundary; no Go pointer is ever handed to C and no C pointer is kept by
 * Go after a call returns. Every function that can fail returns a ttpu_status
 * and writes a NUL-terminated message into the caller's err buffer (truncated
 * to errlen). A Go panic is recovered and reported as TTPU_ERROR.
 *
 * Storage data pointers are opaque addresses from a reserved PROT_NONE range:
 * they name a storage and are never dereferenced.
 */
#ifndef TORCHTPU_H
#define TORCHTPU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ttpu_status is the result of every fallible call. */
typedef int32_t ttpu_status;
#define TTPU_OK 0
#define TTPU_ERROR 1        /* err holds the message */
#define TTPU_NO_RULE 2      /* ttpu_op: the op has no rule; run it on CPU */
#define TTPU_NEEDS_RESIZE 3 /* ttpu_op: out= arguments must be resized to outs[] first (dtype: TTPU_RESIZE_*) */
#define TTPU_OOM 4          /* the device memory limit would be exceeded; err holds the message */
#define TTPU_NOT_CAPTURED 5 /* ttpu_capture_end: no program (err says why); the graph's work ran as usual */
#define TTPU_MISMATCH 6     /* ttpu_program_run: the inputs differ from the captured ones (err says how) */
/* How TTPU_NEEDS_RESIZE asks an out= argument to be resized (its ttpu_out's dtype field). */
#define TTPU_RESIZE_WARN 0         /* as at::native::resize_output: contiguous, with PyTorch's warning */
#define TTPU_RESIZE_QUIET 1        /* as Tensor::resize_: contiguous, no warning */
#define TTPU_RESIZE_COLUMN_MAJOR 2 /* resize_output, then batched column-major strides (LAPACK results) */
/* As TTPU_ERROR, for errors PyTorch raises as another Python exception class than RuntimeError. */
#define TTPU_INDEX_ERROR 7
#define TTPU_VALUE_ERROR 8
#define TTPU_TYPE_ERROR 9
#define TTPU_NOT_IMPLEMENTED 10

/* The most dimensions of a new result (ttpu_out, ttpu_layout): CPU's reductions stop at 64 too. Tensor
 * arguments (ttpu_tensor) point at their sizes and have no limit. */
#define TTPU_MAX_DIMS 64

/* Device codes of ttpu_tensor.device. */
#define TTPU_DEV_TPU 0
#define TTPU_DEV_CPU 1 /* a CPU tensor (only 0-dim ones reach ttpu_op); host points at its data */
#define TTPU_DEV_CPU_NUMBER 2 /* as TTPU_DEV_CPU, for a wrapped Python number: it promotes as a number */

/* ttpu_tensor describes one tensor argument: a view of a storage. */
typedef struct {
  uint64_t data;          /* storage base address (opaque); 0 for an undefined tensor */
  int64_t storage_nbytes; /* the storage's size in bytes */
  int64_t offset;         /* storage offset, in elements */
  int32_t dtype;          /* c10::ScalarType code */
  int32_t ndim;
  const int64_t* sizes;   /* ndim entries; valid for the duration of the call */
  const int64_t* strides; /* ndim entries, in elements */
  int32_t device;         /* TTPU_DEV_* */
  int32_t pad_;
  const void* host;       /* TTPU_DEV_CPU only: the element data, contiguous */
} ttpu_tensor;

/* Argument kinds of ttpu_arg.kind. */
#define TTPU_ARG_NONE 0       /* None / undefined optional */
#define TTPU_ARG_TENSOR 1     /* tensors[0] */
#define TTPU_ARG_INT 2        /* i (also SymInt, ScalarType, Layout, MemoryFormat, Device index) */
#define TTPU_ARG_DOUBLE 3     /* d */
#define TTPU_ARG_BOOL 4       /* i (0 or 1) */
#define TTPU_ARG_INTLIST 5    /* ints[0..n) */
#define TTPU_ARG_TENSORLIST 6 /* tensors[0..n); undefined entries have data == 0 */
#define TTPU_ARG_STRING 7     /* str */
#define TTPU_ARG_DOUBLELIST 8 /* doubles[0..n) */
#define TTPU_ARG_BOOLLIST 9   /* ints[0..n) of 0/1 */
#define TTPU_ARG_SCALAR_INT 10    /* a Scalar holding an integer: i */
#define TTPU_ARG_SCALAR_DOUBLE 11 /* a Scalar holding a float: d */
#define TTPU_ARG_SCALAR_BOOL 12   /* a Scalar holding a bool: i */
#define TTPU_ARG_SCALAR_COMPLEX 13 /* a Scalar holding a complex number: doubles[0..2) = real, imaginary */

/* ttpu_arg is one schema argument, in schema order (keyword-only ones included). */
typedef struct {
  int32_t kind;
  int32_t pad_;
  int64_t i;
  double d;
  int64_t n;
  const int64_t* ints;
  const double* doubles;
  const ttpu_tensor* tensors;
  const char* str;
} ttpu_arg;

/* ttpu_out is one new output tensor created by Go: a fresh dense storage, contiguous
 * in sizes (the result's sizes, or permuted as a ttpu_layout asked). */
typedef struct {
  uint64_t data;  /* storage base address; the shim owns it and calls ttpu_free */
  int64_t nbytes;
  int32_t dtype;
  int32_t ndim;
  int64_t sizes[TTPU_MAX_DIMS];
} ttpu_out;

/* ttpu_layout is the memory order asked for one new result of ttpu_op: perm[0..ndim)
 * lists its dimensions from the outermost in memory to the innermost (the order of
 * PyTorch's strides for that result). The result's storage then holds the value in
 * that order and ttpu_out.sizes gives the permuted sizes; ndim 0 (or an identity
 * perm) keeps the result contiguous. */
typedef struct {
  int32_t ndim;
  int32_t pad_;
  int64_t perm[TTPU_MAX_DIMS];
} ttpu_layout;

/* The Go side includes the types only (cgo writes its own prototypes). */
/* One event of a trace (ttpu_trace_stop_events). Times are nanoseconds since
 * the Unix epoch; done_ns is when an execution finished on the device (0:
 * unknown). kind is one of TTPU_TRACE_*. */
enum {
  TTPU_TRACE_COMPILE = 0,
  TTPU_TRACE_LOAD = 1,
  TTPU_TRACE_EXECUTE = 2,
  TTPU_TRACE_FLUSH = 3,
  TTPU_TRACE_H2D = 4,
  TTPU_TRACE_D2H = 5,
  TTPU_TRACE_FALLBACK = 6,
};

typedef struct {
  int32_t kind;
  int32_t ops;
  int64_t start_ns, dur_ns, done_ns, bytes;
  char name[112];
} ttpu_trace_event;

#ifndef TTPU_TYPES_ONLY

/* ttpu_init loads the PJRT plugin at plugin_path and creates the client. It is
 * idempotent; after a failure every device call reports the same error. */
ttpu_status ttpu_init(const char* plugin_path, int32_t cpu_device_count, char* err, int64_t errlen);

/* ttpu_device_count returns the number of addressable devices (0 before init). */
int32_t ttpu_device_count(void);

/* ttpu_alloc reserves nbytes of opaque device address space for a new storage. */
ttpu_status ttpu_alloc(int64_t nbytes, int32_t device, uint64_t* addr, char* err, int64_t errlen);

/* ttpu_free releases a storage; a pending value nobody can read is dropped. */
void ttpu_free(uint64_t addr);

/* ttpu_has_rule returns 1 when op (a full overload name, "aten::add.Tensor") has a rule, 2 when that rule also
   takes a seed after the schema's arguments (an op that draws random numbers with no Generator argument), and 0
   when op has no rule. */
int32_t ttpu_has_rule(const char* op);

/* ttpu_op runs op on args. Results that alias a mutated argument (in-place and
 * out= variants) are written into that argument's storage and not returned;
 * every other result is returned in outs, in schema order. With
 * TTPU_NEEDS_RESIZE, outs[k] holds the sizes each mutated out= argument must
 * have (in argument order); the caller resizes them and calls again. device is
 * the device the shim assigns the op (its tensors', a device argument's, or the
 * current one); new results are created there. layouts[k] (k < nlayouts) is the
 * memory order of new result k; layouts may be NULL when nlayouts is 0. */
ttpu_status ttpu_op(const char* op, const ttpu_arg* args, int32_t nargs, int32_t device, const ttpu_layout* layouts,
                    int32_t nlayouts, ttpu_out* outs, int32_t maxouts, int32_t* nouts, char* err, int64_t errlen);

/* ttpu_from_host writes nbytes of contiguous host data (dst's dtype, dst's sizes) into the view dst. */
ttpu_status ttpu_from_host(const ttpu_tensor* dst, const void* src, int64_t nbytes, char* err, int64_t errlen);

/* ttpu_to_host reads the view src into nbytes of contiguous host memory (src's dtype). Blocks. */
ttpu_status ttpu_to_host(const ttpu_tensor* src, void* dst, int64_t nbytes, char* err, int64_t errlen);

/* ttpu_storage_copy copies the first nbytes of storage src into storage dst (used by resize_). */
ttpu_status ttpu_storage_copy(uint64_t dst, uint64_t src, int64_t nbytes, char* err, int64_t errlen);

/* ttpu_all_reduce_devices reduces n storages, addrs[i] on device i, with op
 * ("sum", "product", "min", "max") in one XLA program run on n replicas, and
 * writes the result into each storage. */
ttpu_status ttpu_all_reduce_devices(const uint64_t* addrs, int32_t n, const char* op, char* err, int64_t errlen);

/* ttpu_synchronize flushes pending work and waits for the device to finish it. */
ttpu_status ttpu_synchronize(char* err, int64_t errlen);

/* ttpu_mark_step marks a step boundary (an optimizer step): in fused mode the
 * pending graph is launched, without waiting for it. */
ttpu_status ttpu_mark_step(char* err, int64_t errlen);

/* ttpu_set_default_dtype tells the engine torch's default floating dtype (a
   c10::ScalarType: Float, Double, Half or BFloat16) when it changes. */
ttpu_status ttpu_set_default_dtype(int32_t dtype, char* err, int64_t errlen);

/* ttpu_autograd_boundary tells the engine that ops started (backward != 0) or
 * stopped (0) arriving from inside an autograd backward pass: in fused mode the
 * pending graph is launched, without waiting for it, so the device runs the
 * forward while the host records the backward, and the backward while it
 * records the optimizer step. */
ttpu_status ttpu_autograd_boundary(int32_t backward, char* err, int64_t errlen);

/* ttpu_max_memory_allocated returns the peak of ttpu_memory_allocated since the
 * last ttpu_reset_peak_memory; ttpu_memory_limit the byte limit of the device. */
int64_t ttpu_max_memory_allocated(void);
void ttpu_reset_peak_memory(void);
int64_t ttpu_memory_limit(void);

/* ttpu_empty_cache returns the freed host blocks the CPU plugin's cache keeps to the system. */
void ttpu_empty_cache(void);

/* ttpu_note_fallback counts one CPU fallback of op; returns 1 the first time (warn then). */
int32_t ttpu_note_fallback(const char* op);

/* ttpu_fallback_is_error returns 1 when TORCHTPU_FALLBACK=error. */
int32_t ttpu_fallback_is_error(void);

/* ttpu_set_mode selects "debug", "strict" or "fused". */
ttpu_status ttpu_set_mode(const char* mode, char* err, int64_t errlen);

/* ttpu_get_mode writes the current mode's name into buf. */
void ttpu_get_mode(char* buf, int64_t len);

/* ttpu_metrics_json writes the metrics as JSON into buf and returns the full length needed. */
int64_t ttpu_metrics_json(char* buf, int64_t len);

/* ttpu_device_info writes device's description as JSON into buf: the plugin's platform name and
 * version and the kind the plugin gives the device. */
ttpu_status ttpu_device_info(int32_t device, char* buf, int64_t len, char* err, int64_t errlen);

/* ttpu_reset_metrics zeroes every counter. */
void ttpu_reset_metrics(void);

/* ttpu_trace_start clears the engine's event buffer and records compiles,
 * executions (with completion times), transfers, flushes and CPU fallbacks,
 * up to limit events (0: the default), until ttpu_trace_stop. */
ttpu_status ttpu_trace_start(int64_t limit, char* err, int64_t errlen);

/* ttpu_trace_stop stops recording and writes the events as JSON into buf; it
 * returns the length needed (the NUL included). When that is more than len,
 * nothing is lost: call again with a larger buffer. */
int64_t ttpu_trace_stop(char* buf, int64_t len);

/* ttpu_trace_stop_events is ttpu_trace_stop for C++ callers (the profiler
 * integration): it fills at most max events and returns how many there are;
 * call again with a larger array when that is more than max. */
int64_t ttpu_trace_stop_events(ttpu_trace_event* out, int64_t max);

/* ttpu_live_storages returns the number of storages alive; ttpu_memory_allocated their bytes. */
int64_t ttpu_live_storages(void);
int64_t ttpu_memory_allocated(void);

/* ttpu_mark_forked makes every later device call fail (called in a forked child). */
void ttpu_mark_forked(void);

/* ttpu_stop_compiles stops the background compiles of strict mode's cold runs before the process
 * exits: with a persistent compile cache on, queued ones still compile (the next process finds them),
 * else they are dropped; running ones finish. Later ops compile in the foreground. */
void ttpu_stop_compiles(void);

/* ttpu_set_cold_runs turns strict mode's cold runs on (on != 0) or off and stores in *was whether
 * they were on; turning them off launches a pending run. */
ttpu_status ttpu_set_cold_runs(int32_t on, int32_t* was, char* err, int64_t errlen);

/* ttpu_await_compiles waits until every background compile has finished and is counted in the
 * metrics; it fails with the first compile error. */
ttpu_status ttpu_await_compiles(char* err, int64_t errlen);

/* Compiled programs (torch.compile(backend="tpu")). A capture records one graph, run once on its
 * real inputs by the caller between ttpu_capture_begin and ttpu_capture_end, into one program whose
 * parameters are the inputs by position. Programs are named by integer handles. */

/* ttpu_capture_begin runs pending work and starts capturing the graph named name (for messages:
 * "frame 0 graph 0 forward"); ops record without flushing. The program runs on the inputs' device. */
ttpu_status ttpu_capture_begin(const char* name, const ttpu_tensor* inputs, int32_t ninputs, char* err,
                               int64_t errlen);

/* ttpu_capture_abort ends a capture whose graph raised; the recorded work runs as usual. */
ttpu_status ttpu_capture_abort(char* err, int64_t errlen);

/* ttpu_capture_end makes the program whose results are outputs and the inputs the graph wrote,
 * compiles it (through the compile cache) and runs it once; *handle names it. For each output,
 * kinds[k] is 0 (fresh result indices[k] of ttpu_program_run) or 1 (a view of input indices[k]).
 * TTPU_NOT_CAPTURED: the graph cannot be one program (err says why); its work ran as usual. */
ttpu_status ttpu_capture_end(const ttpu_tensor* inputs, int32_t ninputs, const ttpu_tensor* outputs,
                             int32_t noutputs, int64_t* handle, int32_t* kinds, int32_t* indices,
                             char* err, int64_t errlen);

/* ttpu_graph_capture_begin runs pending work and starts a graph capture (torch.tpu.graph) on the
 * current device: a program with no positional inputs that binds every storage it reads or writes by
 * address. A sync before the end fails with the capture invalid; ttpu_capture_abort ends it. */
ttpu_status ttpu_graph_capture_begin(char* err, int64_t errlen);

/* ttpu_graph_capture_end compiles the captured region into one program without running it; *handle
 * names it. ttpu_program_run with no inputs replays it. */
ttpu_status ttpu_graph_capture_end(int64_t* handle, char* err, int64_t errlen);

/* ttpu_program_seeds returns how many seeds a run of the program takes (one per random op). */
int32_t ttpu_program_seeds(int64_t handle);

/* ttpu_program_outputs returns how many fresh results a run of the program gives. */
int32_t ttpu_program_outputs(int64_t handle);

/* ttpu_program_run replays a program: binds inputs by position, launches its executable with the
 * seeds, writes in-place updates into the inputs' storages and returns the fresh results in outs.
 * TTPU_MISMATCH: the inputs differ from the captured ones (capture another program). */
ttpu_status ttpu_program_run(int64_t handle, const ttpu_tensor* inputs, int32_t ninputs, const int64_t* seeds,
                             int32_t nseeds, ttpu_out* outs, int32_t maxouts, int32_t* nouts, char* err,
                             int64_t errlen);

/* ttpu_program_text copies up to n bytes of the StableHLO text program handle was compiled from into buf
 * (buf may be NULL) and returns the text's whole length, or -1 when handle names no program. */
int64_t ttpu_program_text(int64_t handle, char* buf, int64_t n);

/* ttpu_program_step makes the replays of program handle open a compiled step (torch.compile's
 * mode="reduce-overhead"): in strict mode the engine records as in fused mode from such a replay to the
 * next flush (the optimizer step's mark or a sync), so the step launches as one program. */
void ttpu_program_step(int64_t handle);

/* ttpu_program_free releases a program. */
void ttpu_program_free(int64_t handle);

#endif /* TTPU_TYPES_ONLY */

#ifdef __cplusplus
}
#endif

#endif /* TORCHTPU_H */
