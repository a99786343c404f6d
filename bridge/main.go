// Command bridge is the C ABI of libtorchtpu.so (see torchtpu.h): it
// marshals plain C structs into engine calls, recovers every panic into an
// error code and message, and holds no logic of its own.
package main

/*
#include <stdint.h>
#include <string.h>
#define TTPU_TYPES_ONLY
#include "torchtpu.h"
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"torchtpu/dispatch"
	"torchtpu/engine"
)

func main() {}

// shimDigest is set by the build to the C++ shim archive's digest, so a new
// shim relinks the library.
var shimDigest string

var eng = engine.New()

// setErr copies msg into the caller's buffer, NUL-terminated and truncated.
func setErr(buf *C.char, n C.int64_t, msg string) {
	if buf == nil || n <= 0 {
		return
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
	k := copy(dst[:len(dst)-1], msg)
	dst[k] = 0
}

// guard runs f, turning an error or a panic into TTPU_ERROR plus a message.
func guard(buf *C.char, n C.int64_t, f func() error) (status C.ttpu_status) {
	defer func() {
		if r := recover(); r != nil {
			setErr(buf, n, fmt.Sprintf("torchtpu: internal error: %v", r))
			status = C.TTPU_ERROR
		}
	}()
	if err := f(); err != nil {
		setErr(buf, n, err.Error())
		var oom *engine.OOMError
		if errors.As(err, &oom) {
			return C.TTPU_OOM
		}
		switch dispatch.KindOf(err) {
		case dispatch.IndexErr:
			return C.TTPU_INDEX_ERROR
		case dispatch.ValueErr:
			return C.TTPU_VALUE_ERROR
		case dispatch.TypeErr:
			return C.TTPU_TYPE_ERROR
		case dispatch.NotImplementedErr:
			return C.TTPU_NOT_IMPLEMENTED
		}
		return C.TTPU_ERROR
	}
	return C.TTPU_OK
}

//export ttpu_init
func ttpu_init(path *C.char, cpuDevices C.int32_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error {
		syncEnv()
		eng.ReadSettings()
		return eng.Init(C.GoString(path), int(cpuDevices))
	})
}

//export ttpu_device_count
func ttpu_device_count() C.int32_t { return C.int32_t(eng.DeviceCount()) }

//export ttpu_alloc
func ttpu_alloc(nbytes C.int64_t, device C.int32_t, addr *C.uint64_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error {
		a, e := eng.Alloc(int64(nbytes), int(device))
		*addr = C.uint64_t(a)
		return e
	})
}

//export ttpu_free
func ttpu_free(addr C.uint64_t) {
	defer func() { recover() }()
	eng.Free(uint64(addr))
}

//export ttpu_has_rule
func ttpu_has_rule(op *C.char) C.int32_t {
	e, ok := dispatch.Lookup(opName(op))
	switch {
	case !ok:
		return 0
	case e.Rule.TrailingSeed && e.Variant == dispatch.Functional:
		return 2
	}
	return 1
}

//export ttpu_op
func ttpu_op(op *C.char, args *C.ttpu_arg, nargs C.int32_t, device C.int32_t, layouts *C.ttpu_layout, nlayouts C.int32_t, outs *C.ttpu_out, maxouts C.int32_t, nouts *C.int32_t, err *C.char, errlen C.int64_t) (status C.ttpu_status) {
	*nouts = 0
	name := opName(op)
	var resize *engine.ResizeError
	noRule := false
	status = guard(err, errlen, func() error {
		goArgs := marshalArgs(unsafe.Slice(args, int(nargs)))
		var res []engine.OutTensor
		var e error
		if nlayouts > 0 {
			res, e = eng.OpOnLaidOut(name, int(device), goArgs, marshalLayouts(unsafe.Slice(layouts, int(nlayouts))))
		} else {
			res, e = eng.OpOn(name, int(device), goArgs)
		}
		if errors.Is(e, engine.ErrNoRule) {
			noRule = true
			return e
		}
		if errors.As(e, &resize) {
			return nil
		}
		if e != nil {
			return e
		}
		if len(res) > int(maxouts) {
			return fmt.Errorf("%s: %d results exceed the %d the caller allows", name, len(res), maxouts)
		}
		if err := checkRanks(name, res); err != nil {
			return err
		}
		dst := unsafe.Slice(outs, int(maxouts))
		for i, r := range res {
			fillOut(&dst[i], r.Addr, r.NBytes, r.DType, r.Sizes)
		}
		*nouts = C.int32_t(len(res))
		return nil
	})
	if status == C.TTPU_ERROR && (noRule || !eng.HasRule(name)) {
		return C.TTPU_NO_RULE
	}
	if status == C.TTPU_OK && resize != nil {
		if len(resize.Sizes) > int(maxouts) {
			setErr(err, errlen, name+": too many out= arguments")
			return C.TTPU_ERROR
		}
		dst := unsafe.Slice(outs, int(maxouts))
		for i, s := range resize.Sizes {
			if len(s) > C.TTPU_MAX_DIMS {
				setErr(err, errlen, fmt.Sprintf("%s: only tensors with up to %d dims are supported as tpu results (got %d)", name, C.TTPU_MAX_DIMS, len(s)))
				return C.TTPU_ERROR
			}
			fillOut(&dst[i], 0, 0, 0, s)
			if i < len(resize.Modes) {
				dst[i].dtype = C.int32_t(resize.Modes[i])
			}
		}
		*nouts = C.int32_t(len(resize.Sizes))
		return C.TTPU_NEEDS_RESIZE
	}
	return status
}

// checkRanks refuses results of more dimensions than a ttpu_out holds.
func checkRanks(name string, res []engine.OutTensor) error {
	for _, r := range res {
		if len(r.Sizes) > C.TTPU_MAX_DIMS {
			return fmt.Errorf("%s: only tensors with up to %d dims are supported as tpu results (got %d)", name, C.TTPU_MAX_DIMS, len(r.Sizes))
		}
	}
	return nil
}

func fillOut(o *C.ttpu_out, addr uint64, nbytes int64, d dispatch.DType, sizes []int64) {
	o.data = C.uint64_t(addr)
	o.nbytes = C.int64_t(nbytes)
	o.dtype = C.int32_t(d)
	o.ndim = C.int32_t(len(sizes))
	for i, s := range sizes {
		o.sizes[i] = C.int64_t(s)
	}
}

//export ttpu_from_host
func ttpu_from_host(dst *C.ttpu_tensor, src unsafe.Pointer, nbytes C.int64_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error {
		t := tensorDesc(dst)
		data := unsafe.Slice((*byte)(src), int(nbytes))
		return eng.FromHost(t, data)
	})
}

//export ttpu_to_host
func ttpu_to_host(src *C.ttpu_tensor, dst unsafe.Pointer, nbytes C.int64_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error {
		t := tensorDesc(src)
		data := unsafe.Slice((*byte)(dst), int(nbytes))
		return eng.ToHost(t, data)
	})
}

//export ttpu_storage_copy
func ttpu_storage_copy(dst, src C.uint64_t, nbytes C.int64_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error { return eng.StorageCopy(uint64(dst), uint64(src), int64(nbytes)) })
}

//export ttpu_synchronize
func ttpu_synchronize(err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, eng.Synchronize)
}

//export ttpu_mark_step
func ttpu_mark_step(err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, eng.MarkStep)
}

//export ttpu_autograd_boundary
func ttpu_autograd_boundary(backward C.int32_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error { return eng.AutogradBoundary(backward != 0) })
}

//export ttpu_set_default_dtype
func ttpu_set_default_dtype(dtype C.int32_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error { return eng.SetDefaultFloat(dispatch.DType(dtype)) })
}

//export ttpu_max_memory_allocated
func ttpu_max_memory_allocated() C.int64_t { return C.int64_t(eng.MaxMemoryAllocated()) }

//export ttpu_reset_peak_memory
func ttpu_reset_peak_memory() { eng.ResetPeakMemory() }

//export ttpu_memory_limit
func ttpu_memory_limit() C.int64_t { return C.int64_t(eng.MemoryLimit()) }

//export ttpu_empty_cache
func ttpu_empty_cache() { eng.EmptyCache() }

//export ttpu_note_fallback
func ttpu_note_fallback(op *C.char) C.int32_t {
	if eng.NoteFallback(opName(op)) {
		return 1
	}
	return 0
}

//export ttpu_fallback_is_error
func ttpu_fallback_is_error() C.int32_t {
	if os.Getenv("TORCHTPU_FALLBACK") == "error" {
		return 1
	}
	return 0
}

//export ttpu_set_mode
func ttpu_set_mode(mode *C.char, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error {
		m, e := engine.ParseMode(C.GoString(mode))
		if e != nil {
			return e
		}
		return eng.SetMode(m)
	})
}

//export ttpu_get_mode
func ttpu_get_mode(buf *C.char, n C.int64_t) { setErr(buf, n, eng.Mode().String()) }

//export ttpu_metrics_json
func ttpu_metrics_json(buf *C.char, n C.int64_t) C.int64_t {
	js := eng.MetricsJSON()
	setErr(buf, n, string(js))
	return C.int64_t(len(js) + 1)
}

//export ttpu_device_info
func ttpu_device_info(device C.int32_t, buf *C.char, n C.int64_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error {
		d, e := eng.Device(int(device))
		if e != nil {
			return e
		}
		js, e := json.Marshal(d)
		if e != nil {
			return e
		}
		setErr(buf, n, string(js))
		return nil
	})
}

//export ttpu_reset_metrics
func ttpu_reset_metrics() { eng.ResetMetrics() }

//export ttpu_live_storages
func ttpu_live_storages() C.int64_t { return C.int64_t(eng.LiveStorages()) }

//export ttpu_memory_allocated
func ttpu_memory_allocated() C.int64_t { return C.int64_t(eng.MemoryAllocated()) }

//export ttpu_mark_forked
func ttpu_mark_forked() { eng.MarkForked() }

//export ttpu_stop_compiles
func ttpu_stop_compiles() { eng.StopCompiles() }

//export ttpu_set_cold_runs
func ttpu_set_cold_runs(on C.int32_t, was *C.int32_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error {
		prev, e := eng.SetColdRuns(on != 0)
		*was = 0
		if prev {
			*was = 1
		}
		return e
	})
}

//export ttpu_await_compiles
func ttpu_await_compiles(err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, eng.AwaitCompiles)
}

//export ttpu_all_reduce_devices
func ttpu_all_reduce_devices(addrs *C.uint64_t, n C.int32_t, op *C.char, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error {
		list := make([]uint64, int(n))
		for i, a := range unsafe.Slice(addrs, int(n)) {
			list[i] = uint64(a)
		}
		return eng.AllReduceDevices(list, C.GoString(op))
	})
}
