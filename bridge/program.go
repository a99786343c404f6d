package main

/*
#include <stdint.h>
#define TTPU_TYPES_ONLY
#include "torchtpu.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"torchtpu/engine"
)

// tensorDescs copies n C tensor descriptions.
func tensorDescs(ts *C.ttpu_tensor, n C.int32_t) []*engine.TensorDesc {
	out := make([]*engine.TensorDesc, int(n))
	if n == 0 {
		return out
	}
	for i, t := range unsafe.Slice(ts, int(n)) {
		out[i] = tensorDesc(&t)
	}
	return out
}

//export ttpu_capture_begin
func ttpu_capture_begin(name *C.char, inputs *C.ttpu_tensor, n C.int32_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error { return eng.CaptureBegin(C.GoString(name), tensorDescs(inputs, n)) })
}

//export ttpu_capture_abort
func ttpu_capture_abort(err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, eng.CaptureAbort)
}

//export ttpu_capture_end
func ttpu_capture_end(inputs *C.ttpu_tensor, nin C.int32_t, outputs *C.ttpu_tensor, nout C.int32_t,
	handle *C.int64_t, kinds *C.int32_t, indices *C.int32_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	*handle = 0
	var notCaptured *engine.ErrNotCaptured
	var endErr error
	status := guard(err, errlen, func() error {
		h, refs, e := eng.CaptureEnd(tensorDescs(inputs, nin), tensorDescs(outputs, nout))
		endErr = e
		if e != nil {
			return e
		}
		if nout > 0 {
			ks, is := unsafe.Slice(kinds, int(nout)), unsafe.Slice(indices, int(nout))
			for i, r := range refs {
				ks[i], is[i] = C.int32_t(r.Kind), C.int32_t(r.Index)
			}
		}
		*handle = C.int64_t(h)
		return nil
	})
	if status == C.TTPU_ERROR && errors.As(endErr, &notCaptured) {
		return C.TTPU_NOT_CAPTURED
	}
	return status
}

//export ttpu_graph_capture_begin
func ttpu_graph_capture_begin(err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, eng.GraphCaptureBegin)
}

//export ttpu_graph_capture_end
func ttpu_graph_capture_end(handle *C.int64_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	*handle = 0
	return guard(err, errlen, func() error {
		h, e := eng.GraphCaptureEnd()
		*handle = C.int64_t(h)
		return e
	})
}

//export ttpu_program_step
func ttpu_program_step(handle C.int64_t) {
	eng.SetProgramStep(int64(handle))
}

//export ttpu_program_seeds
func ttpu_program_seeds(handle C.int64_t) C.int32_t {
	return C.int32_t(eng.ProgramSeeds(int64(handle)))
}

//export ttpu_program_outputs
func ttpu_program_outputs(handle C.int64_t) C.int32_t {
	return C.int32_t(eng.ProgramOutputs(int64(handle)))
}

//export ttpu_program_text
func ttpu_program_text(handle C.int64_t, buf *C.char, n C.int64_t) (size C.int64_t) {
	defer func() {
		if recover() != nil {
			size = -1
		}
	}()
	text, ok := eng.ProgramText(int64(handle))
	if !ok {
		return -1
	}
	if buf != nil && n > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n)), text)
	}
	return C.int64_t(len(text))
}

//export ttpu_program_free
func ttpu_program_free(handle C.int64_t) {
	defer func() { recover() }()
	eng.FreeProgram(int64(handle))
}

//export ttpu_program_run
func ttpu_program_run(handle C.int64_t, inputs *C.ttpu_tensor, nin C.int32_t, seeds *C.int64_t, nseeds C.int32_t,
	outs *C.ttpu_out, maxouts C.int32_t, nouts *C.int32_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	*nouts = 0
	var mismatch *engine.MismatchError
	var runErr error
	status := guard(err, errlen, func() error {
		s := make([]int64, int(nseeds))
		if nseeds > 0 {
			for i, v := range unsafe.Slice(seeds, int(nseeds)) {
				s[i] = int64(v)
			}
		}
		res, e := eng.RunProgram(int64(handle), tensorDescs(inputs, nin), s, int(maxouts))
		runErr = e
		if e != nil {
			return e
		}
		if len(res) > int(maxouts) {
			return fmt.Errorf("torchtpu: a compiled program gave %d results, the caller allows %d", len(res), maxouts)
		}
		if err := checkRanks("torchtpu: a compiled program", res); err != nil {
			return err
		}
		if len(res) > 0 {
			dst := unsafe.Slice(outs, int(maxouts))
			for i, r := range res {
				fillOut(&dst[i], r.Addr, r.NBytes, r.DType, r.Sizes)
			}
		}
		*nouts = C.int32_t(len(res))
		return nil
	})
	if status == C.TTPU_ERROR && errors.As(runErr, &mismatch) {
		return C.TTPU_MISMATCH
	}
	return status
}
