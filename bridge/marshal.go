package main

/*
#define TTPU_TYPES_ONLY
#include "torchtpu.h"
*/
import "C"

import (
	"unsafe"

	"torchtpu/dispatch"
	"torchtpu/engine"
)

// tensorDesc copies a C tensor description into Go memory.
func tensorDesc(t *C.ttpu_tensor) *engine.TensorDesc {
	n := int(t.ndim)
	d := &engine.TensorDesc{
		Addr:    uint64(t.data),
		Offset:  int64(t.offset),
		DType:   dispatch.DType(t.dtype),
		Sizes:   make([]int64, n),
		Strides: make([]int64, n),
		CPU:     t.device == C.TTPU_DEV_CPU || t.device == C.TTPU_DEV_CPU_NUMBER,
		Number:  t.device == C.TTPU_DEV_CPU_NUMBER,
	}
	if n > 0 {
		for i, s := range unsafe.Slice((*int64)(unsafe.Pointer(t.sizes)), n) {
			d.Sizes[i] = s
		}
		for i, s := range unsafe.Slice((*int64)(unsafe.Pointer(t.strides)), n) {
			d.Strides[i] = s
		}
	}
	if d.CPU && t.host != nil && d.DType.Supported() {
		d.Host = C.GoBytes(t.host, C.int(d.DType.Size()))
	}
	return d
}

// marshalArgs copies the C argument array into dispatch arguments.
func marshalArgs(cargs []C.ttpu_arg) []dispatch.Arg {
	args := make([]dispatch.Arg, len(cargs))
	for i := range cargs {
		a := &cargs[i]
		g := dispatch.Arg{Kind: dispatch.ArgKind(a.kind), Int: int64(a.i), Double: float64(a.d)}
		n := int(a.n)
		switch g.Kind {
		case dispatch.ArgTensor:
			n = 1
			fallthrough
		case dispatch.ArgTensorList:
			ts := unsafe.Slice(a.tensors, n)
			for k := range ts {
				td := tensorDesc(&ts[k])
				g.Tensors = append(g.Tensors, td.Meta())
				g.Handles = append(g.Handles, td)
			}
		case dispatch.ArgIntList, dispatch.ArgBoolList:
			g.Ints = make([]int64, n)
			for k, v := range unsafe.Slice(a.ints, n) {
				g.Ints[k] = int64(v)
			}
		case dispatch.ArgDoubleList, dispatch.ArgScalarComplex:
			g.Doubles = make([]float64, n)
			for k, v := range unsafe.Slice(a.doubles, n) {
				g.Doubles[k] = float64(v)
			}
			if g.Kind == dispatch.ArgScalarComplex {
				g.Double = g.Doubles[0]
			}
		case dispatch.ArgString:
			g.Str = C.GoString(a.str)
		}
		args[i] = g
	}
	return args
}

// marshalLayouts copies the memory orders asked for an op's new results.
func marshalLayouts(cl []C.ttpu_layout) [][]int64 {
	out := make([][]int64, len(cl))
	for k := range cl {
		n := int(cl[k].ndim)
		if n <= 0 || n > C.TTPU_MAX_DIMS {
			continue
		}
		perm := make([]int64, n)
		for i := range perm {
			perm[i] = int64(cl[k].perm[i])
		}
		out[k] = perm
	}
	return out
}
