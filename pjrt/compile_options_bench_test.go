package pjrt

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkCompileOptions measures XLA option sets against each other: for
// every module in TORCHTPU_BENCH_MODULES (a folder of .mlir files as
// TORCHTPU_DUMP_DIR writes them) and every option set in
// TORCHTPU_BENCH_OPTION_SETS (sets separated by ";", each "label:spec" with
// spec as for TORCHTPU_XLA_OPTIONS, an empty spec being the defaults), it
// compiles the module TORCHTPU_BENCH_COMPILES times and launches it
// TORCHTPU_BENCH_RUNS times, the sets interleaved round by round so that a
// change in machine load falls on all of them alike. Each pair prints one
// JSON line with the median compile milliseconds and the median launch
// microseconds (launch to completion, inputs resident). bench/compile_options.py
// drives it.
func BenchmarkCompileOptions(b *testing.B) {
	dir := os.Getenv("TORCHTPU_BENCH_MODULES")
	if dir == "" {
		b.Skip("TORCHTPU_BENCH_MODULES names no folder")
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.mlir"))
	if err != nil || len(paths) == 0 {
		b.Fatalf("no .mlir modules in %s", dir)
	}
	sort.Strings(paths)
	type set struct{ label, spec string }
	var sets []set
	for _, item := range strings.Split(os.Getenv("TORCHTPU_BENCH_OPTION_SETS"), ";") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		label, spec, _ := strings.Cut(item, ":")
		sets = append(sets, set{label, spec})
	}
	if len(sets) == 0 {
		sets = []set{{"default", ""}}
	}
	compiles := envInt("TORCHTPU_BENCH_COMPILES", 5)
	runs := envInt("TORCHTPU_BENCH_RUNS", 200)
	c := benchClient(b)
	defer c.Close()
	if c.PlatformName() == "cpu" {
		cacheOnce.Do(func() {
			if err := c.Plugin().CacheHostAllocations(1 << 30); err != nil {
				b.Fatal(err)
			}
			HoldHostHeap()
		})
	}
	opts := make([][]byte, len(sets))
	for i, s := range sets {
		if opts[i], err = WithOverrides(DefaultCompileOptions(), s.spec); err != nil {
			b.Fatal(err)
		}
	}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		compileMs := make([][]float64, len(sets))
		runUs := make([][]float64, len(sets))
		exes := make([]*Executable, len(sets))
		for round := 0; round < compiles; round++ {
			for i := range sets {
				t0 := time.Now()
				x, err := c.Compile(string(src), opts[i])
				if err != nil {
					b.Fatalf("%s with %s: %v", path, sets[i].label, err)
				}
				compileMs[i] = append(compileMs[i], float64(time.Since(t0).Microseconds())/1e3)
				if exes[i] != nil {
					exes[i].Destroy()
				}
				exes[i] = x
			}
		}
		// Launches go in ten slices per set, the sets taking turns.
		for slice := 0; slice < 10; slice++ {
			for i := range sets {
				us, err := launchTimes(c, exes[i], string(src), (runs+9)/10)
				if err != nil {
					b.Fatalf("%s with %s: %v", path, sets[i].label, err)
				}
				runUs[i] = append(runUs[i], us...)
			}
		}
		for _, x := range exes {
			x.Destroy()
		}
		for i, s := range sets {
			line, _ := json.Marshal(map[string]any{
				"module": filepath.Base(path), "set": s.label, "spec": s.spec,
				"compile_ms": median(compileMs[i]), "run_us": median(runUs[i]),
			})
			fmt.Println(string(line))
		}
	}
}

// launchTimes launches x n times on fresh-per-launch or shared inputs (fresh
// when the module donates them) and returns each launch's microseconds,
// launch to completion.
func launchTimes(c *Client, x *Executable, src string, n int) ([]float64, error) {
	donates := strings.Contains(src, "tf.aliasing_output")
	args, err := moduleInputs(c, src)
	if err != nil {
		return nil, err
	}
	var us []float64
	for i := 0; i < n; i++ {
		if donates && i > 0 {
			if args, err = moduleInputs(c, src); err != nil {
				return nil, err
			}
		}
		t0 := time.Now()
		outs, ev, err := x.Execute(args, 0)
		if err != nil {
			return nil, err
		}
		if err := ev.Await(); err != nil {
			return nil, err
		}
		us = append(us, float64(time.Since(t0).Nanoseconds())/1e3)
		ev.Destroy()
		for _, o := range outs {
			o.Destroy()
		}
		if donates {
			continue
		}
		if i == n-1 {
			for _, a := range args {
				a.Destroy()
			}
		}
	}
	return us, nil
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64{}, xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
