package engine

import (
	"fmt"
	"strings"

	"torchtpu/dispatch"
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// reduceBody is the region of stablehlo.all_reduce for each reduction.
var reduceBody = map[string]string{
	"sum":     "stablehlo.add",
	"product": "stablehlo.multiply",
	"min":     "stablehlo.minimum",
	"max":     "stablehlo.maximum",
}

// allReduceModule is the replicated program: each replica's argument summed
// (or multiplied, ...) across all replicas.
func allReduceModule(t hlo.Type, op string, n int) string {
	scalar := hlo.T(t.Elem).String()
	groups := make([]string, n)
	for i := range groups {
		groups[i] = fmt.Sprint(i)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "module @all_reduce attributes {mhlo.num_replicas = %d : i32, mhlo.num_partitions = 1 : i32} {\n", n)
	fmt.Fprintf(&sb, "  func.func public @main(%%arg0: %s) -> %s {\n", t, t)
	fmt.Fprintf(&sb, "    %%0 = \"stablehlo.all_reduce\"(%%arg0) <{replica_groups = dense<[[%s]]> : tensor<1x%dxi64>}> ({\n", strings.Join(groups, ", "), n)
	fmt.Fprintf(&sb, "    ^bb0(%%a: %s, %%b: %s):\n", scalar, scalar)
	fmt.Fprintf(&sb, "      %%r = %s %%a, %%b : %s\n", reduceBody[op], scalar)
	fmt.Fprintf(&sb, "      stablehlo.return %%r : %s\n", scalar)
	fmt.Fprintf(&sb, "    }) : (%s) -> %s\n", t, t)
	fmt.Fprintf(&sb, "    return %%0 : %s\n  }\n}\n", t)
	return sb.String()
}

// AllReduceDevices reduces the storages at addrs, one per device (addrs[i]
// on device i), with op ("sum", "product", "min" or "max") and writes the
// result into each of them. It is one XLA program compiled for len(addrs)
// replicas and launched once on all of them, so its all_reduce runs inside
// XLA. The storages must hold whole values of one shape and dtype.
func (e *Engine) AllReduceDevices(addrs []uint64, op string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready(); err != nil {
		return err
	}
	if _, ok := reduceBody[op]; !ok {
		return fmt.Errorf("torchtpu: all_reduce across devices: unknown reduction %q (sum, product, min or max)", op)
	}
	n := len(addrs)
	if n < 1 || n > e.client.DeviceCount() {
		return fmt.Errorf("torchtpu: all_reduce across devices: %d tensors for %d devices", n, e.client.DeviceCount())
	}
	if err := e.unpadStorages(addrs); err != nil {
		return err
	}
	if err := e.flushAll(); err != nil {
		return err
	}
	sts := make([]*Storage, n)
	for i, a := range addrs {
		st, err := e.storage(a)
		if err != nil {
			return err
		}
		if st.device != i {
			return fmt.Errorf("torchtpu: all_reduce across devices: tensor %d is on tpu:%d, expected tpu:%d", i, st.device, i)
		}
		if !st.shaped || st.buf == nil {
			return fmt.Errorf("torchtpu: all_reduce across devices: tensor %d holds no value", i)
		}
		if i > 0 && (st.dtype != sts[0].dtype || fmt.Sprint(st.shape) != fmt.Sprint(sts[0].shape)) {
			return fmt.Errorf("torchtpu: all_reduce across devices: tensor %d is %v %s, tensor 0 is %v %s", i, st.shape, st.dtype, sts[0].shape, sts[0].dtype)
		}
		sts[i] = st
	}
	if sts[0].dtype == dispatch.ComplexHalf && op != "sum" {
		return fmt.Errorf("torchtpu: all_reduce across devices: %s of complex32 tensors is not supported (only sum)", op)
	}
	t := storedType(sts[0].dtype, sts[0].shape) // a complex32 sum adds the float16 parts

	e.fl = flushCtx{reason: "all_reduce across devices", ops: 1}
	exe, err := e.collectiveProgram(allReduceModule(t, op, n), t, n)
	if err != nil {
		return err
	}
	args := make([][]*pjrt.Buffer, n)
	for i, st := range sts {
		args[i] = []*pjrt.Buffer{st.buf}
	}
	l := launch{key: "all_reduce " + op + " " + t.String(), what: fmt.Sprintf("all_reduce (%s) across %d devices", op, n), ops: 1}
	outs, err := e.executeReplicated(l, exe, args)
	if err != nil {
		return fmt.Errorf("torchtpu: all_reduce across %d devices: %w", n, err)
	}
	for i, st := range sts {
		e.dropBuffer(st.buf)
		st.buf, st.known = outs[i][0], nil
	}
	return nil
}

// collectiveProgram returns the program text (of type t) compiled for n
// replicas, from the shared program cache and its tiers.
func (e *Engine) collectiveProgram(text string, t hlo.Type, n int) (*pjrt.Executable, error) {
	key := fmt.Sprintf("r%d:%s", n, text)
	if x, ok := e.cache.Get(key); ok {
		e.m.CacheHits++
		return x.(*program).exe, nil
	}
	e.m.CacheMisses++
	sum := &hlo.Summary{Params: []hlo.Type{t}, Results: []hlo.Type{t}, Ops: []string{"stablehlo.all_reduce"}}
	exe, err := e.compileWith(text, pjrt.ReplicatedCompileOptions(n), sum)
	if err != nil {
		return nil, fmt.Errorf("torchtpu: compiling a collective for %d devices: %w", n, err)
	}
	e.cache.Put(key, &program{exe: exe})
	return exe, nil
}
