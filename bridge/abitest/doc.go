// Package abitest tests libtorchtpu's C ABI (bridge/torchtpu.h) from C, with
// no PyTorch around it: results, views, in-place ops and fused mode against
// hand-derived values, errors that come back as codes plus a message (a Go
// panic included) without changing any tensor, messages cut to the caller's
// buffer, a plugin that cannot load, the memory limit, and a leak check after
// each case. The test builds the bridge as a C shared library and a C driver
// (testdata/driver.c) against it, and runs one process per case.
package abitest
