package main

import (
	"os"
	"runtime/debug"
)

// gcPercent is the collector's target when the user has not set GOGC. Recording an op
// allocates many small objects that die at the next flush, on a live heap of a few
// megabytes; at Go's default of 100 the collector ran so often that it took a fifth of
// a fused step's recording (norm block, 3000 steps: 1.27-1.44 s of process CPU time
// against 0.94-1.17 s at 400).
const gcPercent = 400

func init() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
}
