package engine

import (
	"fmt"
	"os"
	"path/filepath"
)

// dumpModule writes the StableHLO text of a program about to be compiled to
// TORCHTPU_DUMP_DIR/<key prefix>.mlir when that variable names a folder, so
// users can read what the engine emits (and feed it to XLA's own tools).
func (e *Engine) dumpModule(key, text string) {
	dir := os.Getenv("TORCHTPU_DUMP_DIR")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err == nil {
		err = os.WriteFile(filepath.Join(dir, key[:16]+".mlir"), []byte(text), 0o644)
		if err == nil {
			return
		}
	}
	if !e.dumpWarned {
		e.dumpWarned = true
		fmt.Fprintf(os.Stderr, "torchtpu: warning: cannot write to TORCHTPU_DUMP_DIR=%s\n", dir)
	}
}
