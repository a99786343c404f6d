//go:build !linux

package engine

// lowerPriority leaves the thread's priority as it is outside Linux.
func lowerPriority() {}
