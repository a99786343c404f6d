package engine

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// addressSpace hands out opaque storage addresses from one reserved
// PROT_NONE range: unique, never backed by memory, so a stray host
// dereference faults at once. Freed ranges are reused by size class.
type addressSpace struct {
	mu   sync.Mutex
	base uintptr
	size uintptr
	next uintptr
	free map[uintptr][]uintptr
}

const reserveBytes = 1 << 44 // 16 TiB of address space, no memory

var shared struct {
	once  sync.Once
	space *addressSpace
	err   error
}

// newAddressSpace returns the process's address space, reserving it on first
// use. Every engine in a process shares the one reservation: addresses only
// need to be unique within the process, and a 47-bit user address space holds
// just a few 16 TiB reservations.
func newAddressSpace() (*addressSpace, error) {
	shared.once.Do(func() {
		mem, err := unix.Mmap(-1, 0, reserveBytes, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
		if err != nil {
			shared.err = fmt.Errorf("torchtpu: reserving %d bytes of address space: %w", reserveBytes, err)
			return
		}
		base := uintptr(unsafePointer(mem))
		shared.space = &addressSpace{base: base, size: reserveBytes, next: base, free: map[uintptr][]uintptr{}}
	})
	return shared.space, shared.err
}

// sizeClass rounds n up so that freed ranges can be reused.
func sizeClass(n int64) uintptr {
	u := uintptr(max(n, 1))
	switch {
	case u <= 1<<20:
		return (u + 511) &^ 511
	default:
		return (u + 65535) &^ 65535
	}
}

func (a *addressSpace) alloc(n int64) (uint64, error) {
	c := sizeClass(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	if l := a.free[c]; len(l) > 0 {
		p := l[len(l)-1]
		a.free[c] = l[:len(l)-1]
		return uint64(p), nil
	}
	if a.next+c > a.base+a.size {
		return 0, fmt.Errorf("torchtpu: device address space exhausted")
	}
	p := a.next
	a.next += c
	return uint64(p), nil
}

func (a *addressSpace) release(addr uint64, n int64) {
	c := sizeClass(n)
	a.mu.Lock()
	a.free[c] = append(a.free[c], uintptr(addr))
	a.mu.Unlock()
}

func (a *addressSpace) contains(addr uint64) bool {
	return uintptr(addr) >= a.base && uintptr(addr) < a.base+a.size
}
