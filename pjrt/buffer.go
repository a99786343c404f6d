package pjrt

/*
#include "capi.h"

static char tt_empty_byte;
static const void* tt_empty(void) { return &tt_empty_byte; }
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Buffer is an array on a device.
type Buffer struct {
	c      *Client
	mu     sync.Mutex
	holder atomic.Uint64 // the launch holding mu (Execute), 0 for none
	b      *C.PJRT_Buffer
	dims   []int64
	dtype  DType
	device int
}

var errDestroyed = errors.New("pjrt: buffer is destroyed")

// numElements returns the product of dims (1 for a scalar).
func numElements(dims []int64) (int64, error) {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("pjrt: negative dimension in %v", dims)
		}
		n *= d
	}
	return n, nil
}

// BufferFromHost copies data, a dense row-major array of dtype with shape
// dims, to the addressable device with index device. The copy is complete
// with respect to data when the call returns: data may be reused at once.
func (c *Client) BufferFromHost(data []byte, dtype DType, dims []int64, device int) (*Buffer, error) {
	cc, err := c.handle()
	if err != nil {
		return nil, err
	}
	dev, err := c.device(device)
	if err != nil {
		return nil, err
	}
	n, err := numElements(dims)
	if err != nil {
		return nil, err
	}
	if dtype.Size() == 0 {
		return nil, fmt.Errorf("pjrt: cannot create a buffer of dtype %v", dtype)
	}
	if want := n * int64(dtype.Size()); int64(len(data)) != want {
		return nil, fmt.Errorf("pjrt: host data has %d bytes, shape %v of %v needs %d", len(data), dims, dtype, want)
	}
	ptr := C.tt_empty()
	if len(data) > 0 {
		ptr = unsafe.Pointer(&data[0])
	}
	var dimsPtr *C.int64_t
	if len(dims) > 0 {
		dimsPtr = (*C.int64_t)(unsafe.Pointer(&dims[0]))
	}
	var b *C.PJRT_Buffer
	perr := C.tt_buffer_from_host(c.p.api, cc, ptr, C.int(dtype), dimsPtr, C.size_t(len(dims)), dev, &b)
	if err := c.p.check("buffer from host", perr); err != nil {
		if b != nil {
			_ = c.p.check("destroy buffer", C.tt_buffer_destroy(c.p.api, b))
		}
		return nil, err
	}
	return &Buffer{c: c, b: b, dims: append([]int64{}, dims...), dtype: dtype, device: device}, nil
}

// wrapBuffers wraps buffers the plugin made (a launch's results), asking it
// for their dtypes, shapes and devices in one call into C; the buffers and
// their shapes share two allocations.
func (c *Client) wrapBuffers(bs []*C.PJRT_Buffer) ([]*Buffer, error) {
	n := len(bs)
	outs := make([]*Buffer, n)
	if n == 0 {
		return outs, nil
	}
	types := make([]C.int, n)
	dims := make([]*C.int64_t, n)
	ndims := make([]C.size_t, n)
	devs := make([]*C.PJRT_Device, n)
	if err := c.p.check("buffer descriptions", C.tt_buffers_describe(c.p.api, &bs[0], C.size_t(n), &types[0],
		&dims[0], &ndims[0], &devs[0])); err != nil {
		return nil, err
	}
	total := 0
	for _, k := range ndims {
		total += int(k)
	}
	shapes := make([]int64, total)
	slab := make([]Buffer, n)
	var dev *C.PJRT_Device
	index := -1
	for i, off := 0, 0; i < n; i++ {
		k := int(ndims[i])
		shape := shapes[off : off+k : off+k]
		if k > 0 {
			copy(shape, unsafe.Slice((*int64)(unsafe.Pointer(dims[i])), k))
		}
		off += k
		if devs[i] != dev {
			dev, index = devs[i], c.deviceIndex(devs[i])
		}
		b := &slab[i]
		b.c, b.b, b.dims, b.dtype, b.device = c, bs[i], shape, DType(types[i]), index
		outs[i] = b
	}
	return outs, nil
}

// Dims returns a copy of the buffer's shape.
func (b *Buffer) Dims() []int64 { return append([]int64{}, b.dims...) }

// DType returns the buffer's element type.
func (b *Buffer) DType() DType { return b.dtype }

// Device returns the index of the buffer's device among the client's
// addressable devices.
func (b *Buffer) Device() int { return b.device }

// Size returns the buffer's size in bytes as a dense host array.
func (b *Buffer) Size() int {
	n, _ := numElements(b.dims)
	return int(n) * b.dtype.Size()
}

// ToHost copies the buffer into dst as a dense row-major array and waits for
// the copy (and the computation producing the buffer) to finish. len(dst)
// must equal the buffer's size in bytes. On a platform whose device memory is
// host memory it copies a dense buffer itself once the buffer is ready; the
// plugin's own copy goes through a worker thread and an event, which costs
// more than the copy for all but large buffers.
func (b *Buffer) ToHost(dst []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b == nil {
		return errDestroyed
	}
	api := b.c.p.api
	var need C.size_t
	if err := b.c.p.check("buffer host size", C.tt_buffer_host_size(api, b.b, &need)); err != nil {
		return err
	}
	if len(dst) != int(need) {
		return fmt.Errorf("pjrt: ToHost: destination has %d bytes, buffer %v%v needs %d", len(dst), b.dtype, b.dims, int(need))
	}
	ptr := unsafe.Pointer(C.tt_empty())
	if len(dst) > 0 {
		ptr = unsafe.Pointer(&dst[0])
	}
	if b.c.direct {
		if done, err := b.readDirect(dst); err != nil || done {
			return err
		}
	}
	return b.c.p.check("buffer to host", C.tt_buffer_to_host(api, b.b, ptr, need))
}

// readDirect copies the buffer into dst with memcpy when it is dense host
// memory of len(dst) bytes, once it is ready, and reports whether it did; b.mu
// is held.
func (b *Buffer) readDirect(dst []byte) (bool, error) {
	ptr := unsafe.Pointer(C.tt_empty())
	if len(dst) > 0 {
		ptr = unsafe.Pointer(&dst[0])
	}
	var done C.int
	err := b.c.p.check("buffer to host", C.tt_buffer_read_direct(b.c.p.api, b.b, ptr, C.size_t(len(dst)), &done))
	return done != 0, err
}

// Ready returns an event that completes when the buffer's value is
// computed (or its computation failed). The caller destroys the event.
func (b *Buffer) Ready() *Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b == nil {
		return &Event{p: b.c.p, err: errDestroyed}
	}
	var ev *C.PJRT_Event
	if err := b.c.p.check("buffer ready event", C.tt_buffer_ready_event(b.c.p.api, b.b, &ev)); err != nil {
		return &Event{p: b.c.p, err: err}
	}
	return newEvent(b.c.p, ev)
}

// Destroy releases the device memory. It is idempotent.
func (b *Buffer) Destroy() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b != nil {
		_ = b.c.p.check("destroy buffer", C.tt_buffer_destroy(b.c.p.api, b.b))
		b.b = nil
	}
}

// DestroyBuffers destroys bs (nil entries and destroyed buffers are
// skipped) as Destroy does each, with one call into C per client.
func DestroyBuffers(bs []*Buffer) {
	hs := make([]*C.PJRT_Buffer, 0, len(bs))
	var c *Client
	flush := func() {
		if len(hs) > 0 {
			_ = c.p.check("destroy buffers", C.tt_buffers_destroy(c.p.api, &hs[0], C.size_t(len(hs))))
			hs = hs[:0]
		}
	}
	for _, b := range bs {
		if b == nil {
			continue
		}
		b.mu.Lock()
		h := b.b
		b.b = nil
		b.mu.Unlock()
		if h == nil {
			continue
		}
		if b.c != c {
			flush()
			c = b.c
		}
		hs = append(hs, h)
	}
	flush()
}

// handle returns the C buffer or an error once destroyed.
func (b *Buffer) handle() (*C.PJRT_Buffer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b == nil {
		return nil, errDestroyed
	}
	return b.b, nil
}
