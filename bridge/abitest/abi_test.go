package abitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"torchtpu/internal/testplugin"
)

var (
	buildOnce sync.Once
	driverBin string
	buildErr  error
	scratch   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if scratch != "" {
		os.RemoveAll(scratch)
	}
	os.Exit(code)
}

// driver builds the bridge as a C shared library and testdata/driver.c
// against it, once, and returns the driver's path.
func driver(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		scratch, buildErr = os.MkdirTemp("", "torchtpu-abitest-")
		if buildErr != nil {
			return
		}
		lib := filepath.Join(scratch, "libttpuabi.so")
		// go test puts its own toolchain first on PATH.
		if out, err := exec.Command("go", "build", "-buildmode=c-shared", "-o", lib, "torchtpu/bridge").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build -buildmode=c-shared ./bridge: %v\n%s", err, out)
			return
		}
		driverBin = filepath.Join(scratch, "driver")
		cc := exec.Command("gcc", "-O1", "-Wall", "-Wextra", "-Werror", "-I..", "-o", driverBin,
			filepath.Join("testdata", "driver.c"), "-L"+scratch, "-lttpuabi", "-Wl,-rpath,"+scratch)
		if out, err := cc.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("gcc testdata/driver.c: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return driverBin
}

// run runs one case of the driver in its own process, with a hard timeout,
// and returns its lines by name (the first word of each line).
func run(t *testing.T, name string, env ...string) map[string]string {
	t.Helper()
	bin := driver(t)
	plugin := testplugin.Path(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, name, plugin)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("driver %s: %v\nstdout:\n%s\nstderr:\n%s", name, err, out, stderr)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, _, _ := strings.Cut(l, " ")
		if _, dup := lines[k]; dup {
			t.Fatalf("driver %s printed %q twice:\n%s", name, k, out)
		}
		lines[k] = l
	}
	return lines
}

// expect checks that line k is want exactly.
func expect(t *testing.T, lines map[string]string, k, want string) {
	t.Helper()
	if got := lines[k]; got != want {
		t.Errorf("%s:\n got  %q\n want %q", k, got, want)
	}
}

// expectHas checks that line k holds every one of parts.
func expectHas(t *testing.T, lines map[string]string, k string, parts ...string) {
	t.Helper()
	got, ok := lines[k]
	if !ok {
		t.Errorf("%s: no such line", k)
		return
	}
	for _, p := range parts {
		if !strings.Contains(got, p) {
			t.Errorf("%s: %q lacks %q", k, got, p)
		}
	}
}

func expectInit(t *testing.T, lines map[string]string) {
	t.Helper()
	var status, devices int
	if _, err := fmt.Sscanf(lines["init"], "init status=%d devices=%d", &status, &devices); err != nil || status != 0 || devices < 1 {
		t.Fatalf("init: %q (want status 0 and at least one device)", lines["init"])
	}
}

func TestValues(t *testing.T) {
	l := run(t, "values")
	expectInit(t, l)
	expect(t, l, "a", "a status=0 1 2 3 4")
	expect(t, l, "add", "add status=0 nouts=1 dtype=6 ndim=1 size0=4 nbytes=16")
	expect(t, l, "sum", "sum status=0 11 22 33 44")
	expect(t, l, "view", "view status=0 20 30")      // b[1:3]
	expect(t, l, "strided", "strided status=0 1 3")  // a[::2]
	expectHas(t, l, "add_", "add_ status=0 nouts=0") // in place: written into a, nothing returned
	expect(t, l, "a_after_add_", "a_after_add_ status=0 11 22 33 44")
	expect(t, l, "mode", "mode status=0 fused")
	// (a + b) * b * b with a + b = 11 22 33 44 and b = 10 20 30 40.
	expect(t, l, "fused", "fused status=0 1100 8800 29700 70400")
	expect(t, l, "leaks", "leaks status=0 live=0 bytes=0")
}

func TestErrors(t *testing.T) {
	l := run(t, "errors")
	expectInit(t, l)
	expectHas(t, l, "mismatch", "mismatch status=1 nouts=0 ", "(aten::add.Tensor on tpu, arguments:", "(4)", "(3)", "[4] float32, [3] float32")
	expectHas(t, l, "in_place_mismatch", "in_place_mismatch status=1 nouts=0 ", "(aten::add_.Tensor on tpu, arguments:", "[4] float32, [3] float32")
	expect(t, l, "a_unchanged", "a_unchanged status=0 1 2 3 4")
	expect(t, l, "no_rule", "no_rule status=2 has_rule=0")
	expect(t, l, "has_rule_add", "has_rule_add 1")
	expect(t, l, "has_rule_dropout", "has_rule_dropout 2")
	expectHas(t, l, "null_args", "null_args status=1 torchtpu: internal error:")
	expectHas(t, l, "null_tensors", "null_tensors status=1 torchtpu: internal error:")
	expectHas(t, l, "short_read", "short_read status=1", "16 bytes", "8 host bytes")
	expectHas(t, l, "unknown_storage", "unknown_storage status=1", "0x7ff0000000")
	expectHas(t, l, "bad_mode", "bad_mode status=1", `"fastest"`, `"fused"`)
	// After all of that the library still computes.
	expect(t, l, "after_values", "after_values status=0 2 4 6 8")
	expect(t, l, "leaks", "leaks status=0 live=0 bytes=0")
}

func TestMessageIsCutToTheCallersBuffer(t *testing.T) {
	l := run(t, "truncate")
	expectInit(t, l)
	// An 8-byte buffer gets 7 characters and the NUL; the 4 bytes after it stay untouched.
	expect(t, l, "truncate", "truncate status=1 len=7 text=torchtp guard=####")
}

func TestPluginThatCannotLoad(t *testing.T) {
	l := run(t, "bad-plugin")
	expectHas(t, l, "init", "init status=1 devices=0", "/nonexistent/xla_plugin.so")
	// Every later device call reports the same error.
	expectHas(t, l, "alloc_after", "alloc_after status=1", "/nonexistent/xla_plugin.so")
}

func TestMemoryLimit(t *testing.T) {
	l := run(t, "oom", "TORCHTPU_MEMORY_LIMIT=2048")
	expectInit(t, l)
	expectHas(t, l, "big", "big status=4", "out of memory", "4096 bytes", "limit of 2048 bytes")
	expect(t, l, "small_after", "small_after status=0 1 2 3 4")
	expect(t, l, "leaks", "leaks status=0 live=0 bytes=0")
}
