package pjrt

import (
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// BenchmarkDumpedProgram measures one program alone: the device time of a
// module that TORCHTPU_DUMP_DIR wrote, launched from Go and awaited each
// time, with no PyTorch, recording or host copies around it. Name the
// module with TORCHTPU_BENCH_MODULE; XLA options go in TORCHTPU_XLA_OPTIONS
// as for the engine. Float inputs hold 0.5, integer and boolean inputs 0.
// Modules from other front ends that print StableHLO (JAX's lowered text)
// run the same way, so two programs for the same math compare directly.
//
//	TORCHTPU_BENCH_MODULE=DIR/KEY.mlir go test ./pjrt -run - -bench DumpedProgram -count 5
func BenchmarkDumpedProgram(b *testing.B) {
	path := os.Getenv("TORCHTPU_BENCH_MODULE")
	if path == "" {
		b.Skip("TORCHTPU_BENCH_MODULE names no module")
	}
	src, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	c := benchClient(b)
	defer c.Close()
	if c.PlatformName() == "cpu" { // as the engine does: a launch's temporaries are not mapped afresh
		cacheOnce.Do(func() {
			if err := c.Plugin().CacheHostAllocations(1 << 30); err != nil {
				b.Fatal(err)
			}
			HoldHostHeap()
		})
	}
	opts := DefaultCompileOptions()
	if spec := os.Getenv("TORCHTPU_XLA_OPTIONS"); spec != "" {
		if opts, err = WithOverrides(opts, spec); err != nil {
			b.Fatal(err)
		}
	}
	x, err := c.Compile(string(src), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Destroy()
	// A program that donates its inputs consumes them: each launch then gets
	// fresh ones, made outside the timed part.
	donates := strings.Contains(string(src), "tf.aliasing_output")
	args, err := moduleInputs(c, string(src))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if donates && i > 0 {
			b.StopTimer()
			if args, err = moduleInputs(c, string(src)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		outs, ev, err := x.Execute(args, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := ev.Await(); err != nil {
			b.Fatal(err)
		}
		ev.Destroy()
		for _, o := range outs {
			o.Destroy()
		}
		if !donates {
			continue
		}
		for _, a := range args {
			a.Destroy()
		}
	}
	if !donates {
		for _, a := range args {
			a.Destroy()
		}
	}
}

var cacheOnce sync.Once

var mainArg = regexp.MustCompile(`%arg\d+: tensor<((?:\d+x)*)([a-z]+\d+)>`)

// moduleInputs makes one device buffer per parameter of the module's main
// function.
func moduleInputs(c *Client, src string) ([]*Buffer, error) {
	head := src[strings.Index(src, "@main("):]
	head = head[:strings.Index(head, ") ->")]
	half := map[string]uint64{"f16": 0x3800, "bf16": 0x3f00, "f32": 0x3f000000, "f64": 0x3fe0000000000000}
	var bufs []*Buffer
	for _, m := range mainArg.FindAllStringSubmatch(head, -1) {
		var dims []int64
		n := 1
		for _, d := range strings.Split(strings.TrimSuffix(m[1], "x"), "x") {
			if d != "" {
				v, _ := strconv.ParseInt(d, 10, 64)
				dims, n = append(dims, v), n*int(v)
			}
		}
		dt := map[string]DType{"f16": F16, "bf16": BF16, "f32": F32, "f64": F64, "i1": PRED,
			"i8": S8, "i16": S16, "i32": S32, "i64": S64, "ui8": U8, "ui32": U32, "ui64": U64}[m[2]]
		if dt == Invalid {
			for _, b := range bufs {
				b.Destroy()
			}
			return nil, fmt.Errorf("parameter type %s is not supported", m[2])
		}
		size := dt.Size()
		data := make([]byte, n*size)
		if v, ok := half[m[2]]; ok {
			var word [8]byte
			binary.LittleEndian.PutUint64(word[:], v)
			for i := 0; i < len(data); i += size {
				copy(data[i:i+size], word[:size])
			}
		}
		buf, err := c.BufferFromHost(data, dt, dims, 0)
		if err != nil {
			return nil, err
		}
		bufs = append(bufs, buf)
	}
	return bufs, nil
}
