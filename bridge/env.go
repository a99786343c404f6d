package main

/*
extern char **environ;
*/
import "C"

import (
	"os"
	"strings"
	"unsafe"
)

// syncEnv makes Go's view of the environment the C library's. Go copies the
// environment once, from the process's start, so a setting a Python script
// (or a test's conftest) put in os.environ before the first device use would
// otherwise not reach the engine's Init: TORCHTPU_CACHE_DIR among others.
// Settings read when the library loads keep their start values.
func syncEnv() {
	now := map[string]string{}
	for p := C.environ; p != nil && *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		if k, v, ok := strings.Cut(C.GoString(*p), "="); ok && k != "" {
			now[k] = v
		}
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "" {
			if _, ok := now[k]; !ok {
				os.Unsetenv(k)
			}
		}
	}
	for k, v := range now {
		if old, ok := os.LookupEnv(k); !ok || old != v {
			os.Setenv(k, v)
		}
	}
}
