// Package testplugin finds the PJRT plugin that Go tests run on, the way the
// Makefile does: TORCHTPU_PLUGIN_PATH when set, otherwise the XLA CPU plugin
// in the project's Python environment (the one tools/setup_env.sh names).
package testplugin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	once   sync.Once
	path   string
	reason string
)

// Path returns the plugin for tests. Without one the test fails, saying why
// and how to get one; with TORCHTPU_REQUIRE_PLUGIN=0 it is skipped instead,
// and the reason is also printed on stderr so that the skip is seen.
func Path(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		path, reason = find()
		// Tests count compiles, so the persistent compile cache (on by default) stays off
		// unless a test names a folder for it.
		if _, ok := os.LookupEnv("TORCHTPU_CACHE_DIR"); !ok {
			os.Setenv("TORCHTPU_CACHE_DIR", "")
		}
		// A rule with an undeclared need (dispatch.Needs) fails the test.
		os.Setenv("TORCHTPU_CHECK_NEEDS", "1")
	})
	if path != "" {
		return path
	}
	msg := "no PJRT plugin for the plugin tests: " + reason +
		" (run `make build` first, or set TORCHTPU_PLUGIN_PATH to a PJRT plugin)"
	if os.Getenv("TORCHTPU_REQUIRE_PLUGIN") == "0" {
		fmt.Fprintln(os.Stderr, "SKIP "+t.Name()+": "+msg)
		t.Skip(msg)
	}
	t.Fatal(msg + "; TORCHTPU_REQUIRE_PLUGIN=0 skips these tests instead")
	return ""
}

func find() (string, string) {
	if p := os.Getenv("TORCHTPU_PLUGIN_PATH"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Sprintf("TORCHTPU_PLUGIN_PATH=%s: %v", p, err)
		}
		return p, ""
	}
	root, err := repoRoot()
	if err != nil {
		return "", err.Error()
	}
	venv, err := environment(root)
	if err != nil {
		return "", err.Error()
	}
	matches, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages", "xla_plugins", "xla_cpu_pjrt", "xla_cpu_pjrt.so"))
	if len(matches) == 0 {
		return "", "the Python environment " + venv + " has no XLA CPU plugin (xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so)"
	}
	return matches[0], ""
}

// repoRoot walks up from the working directory to the directory holding
// tools/setup_env.sh.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tools", "setup_env.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no tools/setup_env.sh above the working directory")
		}
		dir = parent
	}
}

// environment returns the project's Python environment as tools/setup_env.sh
// names it. It only looks: an environment that was never built is an error,
// not a download.
func environment(root string) (string, error) {
	out, err := exec.Command(filepath.Join(root, "tools", "setup_env.sh"), "--path").Output()
	if err != nil {
		return "", fmt.Errorf("tools/setup_env.sh --path: %v", err)
	}
	venv := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(venv, ".complete")); err != nil {
		return "", fmt.Errorf("the Python environment %s is not built", venv)
	}
	return venv, nil
}
