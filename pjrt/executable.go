package pjrt

/*
#include "capi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Executable is a compiled program loaded on a client.
type Executable struct {
	c          *Client
	mu         sync.RWMutex
	le         *C.PJRT_LoadedExecutable
	e          *C.PJRT_Executable
	numOutputs int
	// devices are the indices of the executable's addressable devices
	// (the compile-time device assignment).
	devices []int
	// collect destroys the executable once nothing holds it (collect.go).
	collect runtime.Cleanup
}

var errExecDestroyed = errors.New("pjrt: executable is destroyed")

// Compile compiles a StableHLO module, given as MLIR text or bytecode
// (program format "mlir"), with a serialized xla.CompileOptionsProto. Empty
// compileOptions (nil or zero length) mean DefaultCompileOptions(): an empty
// proto is not passed on, because the XLA CPU plugin aborts the process on
// one (it asks for a device assignment of zero replicas).
func (c *Client) Compile(mlir string, compileOptions []byte) (*Executable, error) {
	cc, err := c.handle()
	if err != nil {
		return nil, err
	}
	if len(mlir) == 0 {
		return nil, errors.New("pjrt: compile: empty program")
	}
	if len(compileOptions) == 0 {
		compileOptions = DefaultCompileOptions()
	}
	format := C.CString("mlir")
	defer C.free(unsafe.Pointer(format))
	var optPtr *C.char
	if len(compileOptions) > 0 {
		optPtr = (*C.char)(unsafe.Pointer(&compileOptions[0]))
	}
	var le *C.PJRT_LoadedExecutable
	perr := C.tt_compile(c.p.api, cc, (*C.char)(unsafe.Pointer(unsafe.StringData(mlir))), C.size_t(len(mlir)),
		format, optPtr, C.size_t(len(compileOptions)), &le)
	if err := c.p.check("compile", perr); err != nil {
		return nil, err
	}
	return c.wrapExecutable(le)
}

// DeserializeExecutable loads an executable produced by Serialize with the
// same plugin and platform version.
func (c *Client) DeserializeExecutable(data []byte) (*Executable, error) {
	cc, err := c.handle()
	if err != nil {
		return nil, err
	}
	if C.tt_has_deserialize(c.p.api) == 0 {
		return nil, errors.New("pjrt: plugin does not support deserializing executables")
	}
	if len(data) == 0 {
		return nil, errors.New("pjrt: deserialize: empty data")
	}
	var le *C.PJRT_LoadedExecutable
	perr := C.tt_deserialize(c.p.api, cc, (*C.char)(unsafe.Pointer(&data[0])), C.size_t(len(data)), &le)
	if err := c.p.check("deserialize executable", perr); err != nil {
		return nil, err
	}
	return c.wrapExecutable(le)
}

// wrapExecutable queries the facts Execute needs and takes ownership of le.
func (c *Client) wrapExecutable(le *C.PJRT_LoadedExecutable) (*Executable, error) {
	api := c.p.api
	x := &Executable{c: c, le: le}
	live.Add(1)
	if err := c.p.check("get executable", C.tt_loaded_get_executable(api, le, &x.e)); err != nil {
		x.Destroy()
		return nil, err
	}
	x.collectWhenUnreachable()
	var n C.size_t
	if err := c.p.check("executable outputs", C.tt_executable_num_outputs(api, x.e, &n)); err != nil {
		x.Destroy()
		return nil, err
	}
	x.numOutputs = int(n)
	var devs **C.PJRT_Device
	if err := c.p.check("executable devices", C.tt_loaded_addressable_devices(api, le, &devs, &n)); err != nil {
		x.Destroy()
		return nil, err
	}
	if n > 0 {
		for _, d := range unsafe.Slice(devs, int(n)) {
			x.devices = append(x.devices, c.deviceIndex(d))
		}
	}
	return x, nil
}

// NumOutputs returns the number of results of one execution (tuple results
// are untupled).
func (x *Executable) NumOutputs() int { return x.numOutputs }

// Devices returns the indices of the devices the executable was compiled
// for.
func (x *Executable) Devices() []int { return append([]int{}, x.devices...) }

// Execute launches the executable on the device with index device and
// returns at once with one Buffer per result and an event that completes when
// the execution does. The caller owns the outputs and the event. When device
// is the one the executable was compiled for, the compile-time assignment is
// used; an executable compiled as portable (CompileOptions(true)) runs on any
// addressable device, and asking a non-portable one for another device is an
// error. Arguments must live on the chosen device.
func (x *Executable) Execute(args []*Buffer, device int) ([]*Buffer, *Event, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.le == nil {
		return nil, nil, errExecDestroyed
	}
	c := x.c
	if _, err := c.handle(); err != nil {
		return nil, nil, err
	}
	dev, err := c.device(device)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case len(x.devices) == 1 && x.devices[0] == device:
		dev = nil // the compile-time assignment is this device
	case len(x.devices) == 1:
		return nil, nil, fmt.Errorf("pjrt: execute: executable is compiled for device %d, not device %d; compile with CompileOptions(true) to run it on any device", x.devices[0], device)
	}
	cargs := make([]*C.PJRT_Buffer, len(args))
	// Hold each distinct argument's lock so that it cannot be destroyed while
	// the launch is in progress. A buffer passed twice is known by the launch
	// holding it (holder), which costs no map per argument.
	id := launchIDs.Add(1)
	locked := make([]*Buffer, 0, len(args))
	defer func() {
		for _, a := range locked {
			a.holder.Store(0)
			a.mu.Unlock()
		}
	}()
	for i, a := range args {
		if a == nil {
			return nil, nil, fmt.Errorf("pjrt: execute: argument %d is nil", i)
		}
		if a.holder.Load() != id {
			a.mu.Lock()
			a.holder.Store(id)
			locked = append(locked, a)
		}
		if a.b == nil {
			return nil, nil, fmt.Errorf("pjrt: execute: argument %d is destroyed", i)
		}
		cargs[i] = a.b
	}
	var argPtr **C.PJRT_Buffer
	if len(cargs) > 0 {
		argPtr = &cargs[0]
	}
	couts := make([]*C.PJRT_Buffer, x.numOutputs+1)
	var ev *C.PJRT_Event
	perr := C.tt_execute(c.p.api, x.le, argPtr, C.size_t(len(cargs)), dev, &couts[0], &ev)
	if err := c.p.check("execute", perr); err != nil {
		return nil, nil, err
	}
	outs, werr := c.wrapBuffers(couts[:x.numOutputs])
	if werr != nil {
		for _, b := range couts[:x.numOutputs] {
			_ = c.p.check("destroy buffer", C.tt_buffer_destroy(c.p.api, b))
		}
		if ev != nil {
			_ = c.p.check("await event", C.tt_event_await(c.p.api, ev))
			_ = c.p.check("destroy event", C.tt_event_destroy(c.p.api, ev))
		}
		return nil, nil, werr
	}
	return outs, newEvent(c.p, ev), nil
}

// launchIDs numbers Execute calls, for Buffer.holder.
var launchIDs atomic.Uint64

// Serialize returns a plugin-specific serialization of the executable, to be
// loaded with DeserializeExecutable by the same plugin version.
func (x *Executable) Serialize() ([]byte, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.e == nil {
		return nil, errExecDestroyed
	}
	var p *C.char
	var n C.size_t
	if err := x.c.p.check("serialize executable", C.tt_executable_serialize(x.c.p.api, x.e, &p, &n)); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pjrt: serialize executable: out of memory")
	}
	defer C.free(unsafe.Pointer(p))
	return C.GoBytes(unsafe.Pointer(p), C.int(n)), nil
}

// Fingerprint returns the plugin's fingerprint of the executable, or "" when
// the plugin does not offer one.
func (x *Executable) Fingerprint() string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.e == nil || C.tt_has_executable_fingerprint(x.c.p.api) == 0 {
		return ""
	}
	var s *C.char
	var n C.size_t
	if err := x.c.p.check("executable fingerprint", C.tt_executable_fingerprint(x.c.p.api, x.e, &s, &n)); err != nil {
		return ""
	}
	return C.GoStringN(s, C.int(n))
}

// Destroy releases the executable now. It is idempotent. Executions
// already launched are unaffected. An executable that is never destroyed is
// released once it is unreachable (collect.go).
func (x *Executable) Destroy() {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.le == nil && x.e == nil {
		return
	}
	x.collect.Stop()
	releaseExecutable(execHandles{c: x.c, le: x.le, e: x.e})
	x.e, x.le = nil, nil
}
