package pjrt

/*
#include <string.h>
#include "capi.h"

// tt_execute_replicated runs le once on each of its ndev devices in one
// launch (a program compiled with num_replicas=ndev): arg_lists[d] holds
// device d's nargs arguments, out_lists[d] receives its results and
// events[d] its completion event.
static PJRT_Error* tt_execute_replicated(const PJRT_Api* api, PJRT_LoadedExecutable* le,
                                         PJRT_Buffer* const* const* arg_lists, size_t nargs, size_t ndev,
                                         PJRT_Buffer** const* out_lists, PJRT_Event** events) {
  PJRT_ExecuteOptions opts;
  memset(&opts, 0, sizeof(opts));
  opts.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE;
  PJRT_LoadedExecutable_Execute_Args a;
  memset(&a, 0, sizeof(a));
  a.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
  a.executable = le;
  a.options = &opts;
  a.argument_lists = arg_lists;
  a.num_devices = ndev;
  a.num_args = nargs;
  a.output_lists = out_lists;
  a.device_complete_events = events;
  return api->PJRT_LoadedExecutable_Execute(&a);
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// ReplicatedCompileOptions returns a serialized xla.CompileOptionsProto for
// n replicas and one partition; replica i runs on device i.
func ReplicatedCompileOptions(n int) []byte {
	var build []byte
	build = appendVarintField(build, buildOptsDeviceOrdinal, ^uint64(0)) // -1
	build = appendVarintField(build, buildOptsNumReplicas, uint64(n))
	build = appendVarintField(build, buildOptsNumPartitions, 1)
	return appendBytesField(nil, compileOptsBuildOptions, build)
}

// buildOptsUseSPMD is xla.ExecutableBuildOptionsProto.use_spmd_partitioning.
const buildOptsUseSPMD = 6

// SPMDCompileOptions returns a serialized xla.CompileOptionsProto for one
// replica split into n partitions by XLA's SPMD partitioner (the shardings
// come from the module's mhlo.sharding attributes); partition i runs on
// device i.
func SPMDCompileOptions(n int) []byte {
	var build []byte
	build = appendVarintField(build, buildOptsDeviceOrdinal, ^uint64(0)) // -1
	build = appendVarintField(build, buildOptsNumReplicas, 1)
	build = appendVarintField(build, buildOptsNumPartitions, uint64(n))
	build = appendVarintField(build, buildOptsUseSPMD, 1)
	return appendBytesField(nil, compileOptsBuildOptions, build)
}

// ExecuteReplicated runs an executable compiled for len(args) replicas (or
// SPMD partitions) once on each of its devices, in one launch, so that its
// collectives meet: args[d] are the arguments of replica d. It waits for every replica and
// returns their results, outs[d] for replica d.
func (x *Executable) ExecuteReplicated(args [][]*Buffer) ([][]*Buffer, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.le == nil {
		return nil, errExecDestroyed
	}
	c := x.c
	if _, err := c.handle(); err != nil {
		return nil, err
	}
	ndev := len(args)
	if ndev == 0 || len(x.devices) != ndev {
		return nil, fmt.Errorf("pjrt: execute replicated: %d argument lists for an executable on %d devices", ndev, len(x.devices))
	}
	nargs := len(args[0])
	// C memory: the argument and output tables hold pointers the plugin reads.
	ptr := C.size_t(unsafe.Sizeof(uintptr(0)))
	argTab := (*[1 << 20]*C.PJRT_Buffer)(C.malloc(C.size_t(ndev*max(nargs, 1)) * ptr))
	outTab := (*[1 << 20]*C.PJRT_Buffer)(C.malloc(C.size_t(ndev*(x.numOutputs+1)) * ptr))
	argLists := (*[1 << 16]**C.PJRT_Buffer)(C.malloc(C.size_t(ndev) * ptr))
	outLists := (*[1 << 16]**C.PJRT_Buffer)(C.malloc(C.size_t(ndev) * ptr))
	events := (*[1 << 16]*C.PJRT_Event)(C.malloc(C.size_t(ndev) * ptr))
	defer C.free(unsafe.Pointer(argTab))
	defer C.free(unsafe.Pointer(outTab))
	defer C.free(unsafe.Pointer(argLists))
	defer C.free(unsafe.Pointer(outLists))
	defer C.free(unsafe.Pointer(events))
	for d, list := range args {
		if len(list) != nargs {
			return nil, fmt.Errorf("pjrt: execute replicated: replica %d has %d arguments, replica 0 has %d", d, len(list), nargs)
		}
		for i, a := range list {
			if a == nil {
				return nil, fmt.Errorf("pjrt: execute replicated: replica %d argument %d is nil", d, i)
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.b == nil {
				return nil, fmt.Errorf("pjrt: execute replicated: replica %d argument %d is destroyed", d, i)
			}
			argTab[d*max(nargs, 1)+i] = a.b
		}
		argLists[d] = &argTab[d*max(nargs, 1)]
		outLists[d] = &outTab[d*(x.numOutputs+1)]
		events[d] = nil
	}
	perr := C.tt_execute_replicated(c.p.api, x.le, (**(*C.PJRT_Buffer))(unsafe.Pointer(&argLists[0])), C.size_t(nargs),
		C.size_t(ndev), (**(*C.PJRT_Buffer))(unsafe.Pointer(&outLists[0])), &events[0])
	if err := c.p.check("execute replicated", perr); err != nil {
		return nil, err
	}
	var first error
	for d := 0; d < ndev; d++ {
		if events[d] != nil {
			ev := newEvent(c.p, events[d])
			if err := ev.Await(); err != nil && first == nil {
				first = err
			}
			ev.Destroy()
		}
	}
	outs := make([][]*Buffer, ndev)
	for d := range outs {
		row := outTab[d*(x.numOutputs+1) : d*(x.numOutputs+1)+x.numOutputs]
		list, err := c.wrapBuffers(row)
		if err != nil {
			if first == nil {
				first = err
			}
			if len(row) > 0 {
				_ = c.p.check("destroy buffers", C.tt_buffers_destroy(c.p.api, &row[0], C.size_t(len(row))))
			}
			continue
		}
		outs[d] = list
	}
	if first != nil {
		for _, list := range outs {
			for _, b := range list {
				if b != nil {
					b.Destroy()
				}
			}
		}
		return nil, first
	}
	return outs, nil
}
