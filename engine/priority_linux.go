package engine

import "syscall"

// lowerPriority gives the calling thread the lowest scheduling priority
// (nice 19); threads it starts inherit it.
func lowerPriority() {
	syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19)
}
