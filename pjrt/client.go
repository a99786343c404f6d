package pjrt

/*
#include "capi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// ClientOptions configures NewClient.
type ClientOptions struct {
	// CPUDeviceCount, when positive, is passed to the plugin as the
	// "cpu_device_count" create option (honored by the XLA CPU plugin).
	CPUDeviceCount int
}

// Client is a PJRT client: one runtime instance with its devices.
// A Client is safe for concurrent use; Close must not race with other calls.
type Client struct {
	p       *Plugin
	c       *C.PJRT_Client
	devices []*C.PJRT_Device
	name    string
	version string
	mu      sync.Mutex
	closed  bool
	// direct is set on a platform whose device memory is host memory ("cpu"):
	// Buffer.ToHost then copies a ready dense buffer with memcpy.
	direct bool
}

// NewClient creates a client on the plugin.
func (p *Plugin) NewClient(opts ClientOptions) (*Client, error) {
	var c *C.PJRT_Client
	if err := p.check("create client", C.tt_client_create(p.api, C.int64_t(opts.CPUDeviceCount), &c)); err != nil {
		return nil, err
	}
	cl := &Client{p: p, c: c}
	var s *C.char
	var n C.size_t
	if err := p.check("platform name", C.tt_client_platform_name(p.api, c, &s, &n)); err != nil {
		cl.Close()
		return nil, err
	}
	cl.name = C.GoStringN(s, C.int(n))
	cl.direct = cl.name == "cpu"
	if err := p.check("platform version", C.tt_client_platform_version(p.api, c, &s, &n)); err != nil {
		cl.Close()
		return nil, err
	}
	cl.version = C.GoStringN(s, C.int(n))
	var devs **C.PJRT_Device
	if err := p.check("addressable devices", C.tt_client_addressable_devices(p.api, c, &devs, &n)); err != nil {
		cl.Close()
		return nil, err
	}
	if n > 0 {
		cl.devices = append([]*C.PJRT_Device(nil), unsafe.Slice(devs, int(n))...)
	}
	return cl, nil
}

// Plugin returns the plugin the client was created on.
func (c *Client) Plugin() *Plugin { return c.p }

// SetDirectReads turns Buffer.ToHost's memcpy of host-memory buffers on or
// off (it is on by default on the "cpu" platform, and cannot be turned on
// elsewhere); tests compare the two paths with it.
func (c *Client) SetDirectReads(on bool) { c.direct = on && c.name == "cpu" }

// PlatformName returns the platform name, e.g. "cpu", "tpu".
func (c *Client) PlatformName() string { return c.name }

// PlatformVersion returns the plugin's human-readable platform version.
func (c *Client) PlatformVersion() string { return c.version }

// DeviceCount returns the number of addressable devices.
func (c *Client) DeviceCount() int { return len(c.devices) }

// device returns the addressable device with index i.
func (c *Client) device(i int) (*C.PJRT_Device, error) {
	if i < 0 || i >= len(c.devices) {
		return nil, fmt.Errorf("pjrt: device index %d out of range [0, %d)", i, len(c.devices))
	}
	return c.devices[i], nil
}

// DeviceKind returns the kind the plugin gives device i, e.g. "cpu" or a
// TPU generation such as "TPU v4".
func (c *Client) DeviceKind(i int) (string, error) {
	d, err := c.device(i)
	if err != nil {
		return "", err
	}
	var s *C.char
	var n C.size_t
	if err := c.p.check("device kind", C.tt_device_kind(c.p.api, d, &s, &n)); err != nil {
		return "", err
	}
	return C.GoStringN(s, C.int(n)), nil
}

// deviceIndex returns the index of d among the addressable devices, or -1.
func (c *Client) deviceIndex(d *C.PJRT_Device) int {
	for i, x := range c.devices {
		if x == d {
			return i
		}
	}
	return -1
}

var errClosed = errors.New("pjrt: client is closed")

// Close destroys the client. Buffers and executables created by the client
// must be destroyed before Close. Close is idempotent.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	_ = c.p.check("destroy client", C.tt_client_destroy(c.p.api, c.c))
	c.c = nil
}

// handle returns the C client or an error once closed.
func (c *Client) handle() (*C.PJRT_Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	return c.c, nil
}
