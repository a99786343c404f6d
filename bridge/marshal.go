package main

/*
#define TTPU_TYPES_ONLY
#include "torchtpu.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"torchtpu/dispatch"
	"torchtpu/engine"
)

// opNames holds each op name the shim has passed, so that an op's call does
// not copy its name into a new Go string.
var opNames struct {
	sync.RWMutex
	m map[string]string
}

// opName returns the Go string of the NUL-terminated op name p.
func opName(p *C.char) string {
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	key := unsafe.String((*byte)(unsafe.Pointer(p)), n)
	opNames.RLock()
	name, ok := opNames.m[key]
	opNames.RUnlock()
	if ok {
		return name
	}
	name = C.GoStringN(p, C.int(n))
	opNames.Lock()
	if opNames.m == nil {
		opNames.m = map[string]string{}
	}
	opNames.m[name] = name
	opNames.Unlock()
	return name
}

// tensorDesc copies a C tensor description into Go memory.
func tensorDesc(t *C.ttpu_tensor) *engine.TensorDesc {
	d := &engine.TensorDesc{}
	fillTensorDesc(d, t, make([]int64, 2*int(t.ndim)))
	return d
}

// fillTensorDesc copies the C tensor description t into d, with its sizes
// and strides in dims (2*ndim elements).
func fillTensorDesc(d *engine.TensorDesc, t *C.ttpu_tensor, dims []int64) {
	n := int(t.ndim)
	*d = engine.TensorDesc{
		Addr:    uint64(t.data),
		Offset:  int64(t.offset),
		DType:   dispatch.DType(t.dtype),
		Sizes:   dims[:n:n],
		Strides: dims[n : 2*n : 2*n],
		CPU:     t.device == C.TTPU_DEV_CPU || t.device == C.TTPU_DEV_CPU_NUMBER,
		Number:  t.device == C.TTPU_DEV_CPU_NUMBER,
	}
	if n > 0 {
		copy(d.Sizes, unsafe.Slice((*int64)(unsafe.Pointer(t.sizes)), n))
		copy(d.Strides, unsafe.Slice((*int64)(unsafe.Pointer(t.strides)), n))
	}
	if d.CPU && t.host != nil && d.DType.Supported() {
		d.Host = C.GoBytes(t.host, C.int(d.DType.Size()))
	}
}

// marshalArgs copies the C argument array into dispatch arguments. The
// tensors of all arguments share a few allocations: their descriptions,
// their sizes and strides, their metadata and their handles.
func marshalArgs(cargs []C.ttpu_arg) []dispatch.Arg {
	args := make([]dispatch.Arg, len(cargs))
	nt, nd := 0, 0
	for i := range cargs {
		a := &cargs[i]
		switch dispatch.ArgKind(a.kind) {
		case dispatch.ArgTensor:
			nt, nd = nt+1, nd+2*int(a.tensors.ndim)
		case dispatch.ArgTensorList:
			for _, t := range unsafe.Slice(a.tensors, int(a.n)) {
				nt, nd = nt+1, nd+2*int(t.ndim)
			}
		}
	}
	descs := make([]engine.TensorDesc, nt)
	dims := make([]int64, nd)
	metas := make([]dispatch.TensorMeta, nt)
	handles := make([]any, nt)
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
			g.Tensors, g.Handles = metas[:n:n], handles[:n:n]
			metas, handles = metas[n:], handles[n:]
			for k := range ts {
				td := &descs[0]
				descs = descs[1:]
				w := 2 * int(ts[k].ndim)
				fillTensorDesc(td, &ts[k], dims[:w:w])
				dims = dims[w:]
				g.Tensors[k], g.Handles[k] = td.Meta(), td
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
