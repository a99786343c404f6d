// Package pjrt is a thin cgo binding of the PJRT C API: it loads a PJRT plugin,
// creates clients, moves buffers between host and device, compiles and runs
// executables, and serializes them. It holds no policy and knows nothing about
// torch.
//
// Objects are released explicitly with Destroy or Close; nothing here relies on
// finalizers. The C side never keeps a Go pointer after a call returns.
package pjrt

/*
#cgo CFLAGS: -I${SRCDIR}/../build/include -O2
#cgo LDFLAGS: -ldl
#include "capi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// HeaderAPIMajor is the PJRT C API major version this package was built against.
var HeaderAPIMajor = int(C.tt_header_major())

// HeaderAPIMinor is the PJRT C API minor version this package was built against.
var HeaderAPIMinor = int(C.tt_header_minor())

// Plugin is a loaded PJRT plugin. A plugin is never unloaded.
type Plugin struct {
	api    *C.PJRT_Api
	handle unsafe.Pointer
	path   string
	major  int
	minor  int
}

var (
	loadMu sync.Mutex
	loaded = map[string]*Plugin{}
)

// Load opens the PJRT plugin at path, checks that its API major version
// matches the header's, and initializes it. Loading the same path twice
// returns the same Plugin.
func Load(path string) (*Plugin, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if p, ok := loaded[path]; ok {
		return p, nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("pjrt: cannot load plugin %q: %w", path, err)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var cerr *C.char
	var handle unsafe.Pointer
	api := C.tt_load(cpath, &handle, &cerr)
	if api == nil {
		msg := "unknown error"
		if cerr != nil {
			msg = C.GoString(cerr)
			C.free(unsafe.Pointer(cerr))
		}
		return nil, fmt.Errorf("pjrt: cannot load plugin %q: %s", path, msg)
	}
	p := &Plugin{api: api, handle: handle, path: path}
	var major, minor C.int
	C.tt_api_version(api, &major, &minor)
	p.major, p.minor = int(major), int(minor)
	if p.major != HeaderAPIMajor {
		return nil, fmt.Errorf("pjrt: plugin %q has PJRT C API version %d.%d, incompatible with %d.%d (major versions differ)",
			path, p.major, p.minor, HeaderAPIMajor, HeaderAPIMinor)
	}
	if C.tt_has_plugin_initialize(api) != 0 {
		if err := p.check("initialize plugin", C.tt_plugin_initialize(api)); err != nil {
			return nil, fmt.Errorf("pjrt: plugin %q: %w", path, err)
		}
	}
	loaded[path] = p
	return p, nil
}

// APIVersion returns the PJRT C API version the plugin reports.
func (p *Plugin) APIVersion() (major, minor int) { return p.major, p.minor }

// Path returns the file the plugin was loaded from.
func (p *Plugin) Path() string { return p.path }
