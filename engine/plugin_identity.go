package engine

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
)

// fingerprintSpan is how much of each end of the plugin file the identity
// hashes: the whole of a 250 MB plugin would take seconds at every start.
const fingerprintSpan = 1 << 20

// pluginIdentity names the plugin build and the machine code it compiles
// for; it is a part of every cache key. It is meant to be equal on two hosts
// exactly when a program compiled on one runs on the other, so that the
// remote tier can share programs: it holds the plugin's API and platform
// versions, a fingerprint of the plugin file (its size and the SHA-256 of its
// first and last MiB, not its path or time), and the host CPU's feature
// flags, since the CPU plugin compiles for the host's instruction set.
func (e *Engine) pluginIdentity() string {
	major, minor := e.client.Plugin().APIVersion()
	return fmt.Sprintf("%d.%d|%s|%s|%s|%s|%s", major, minor, e.client.PlatformName(), e.client.PlatformVersion(),
		fileFingerprint(e.plugin), runtime.GOARCH, cpuFlags())
}

// fileFingerprint is the size of the file at path and the SHA-256 of its
// first and last fingerprintSpan bytes (of all of it, when small), or "?"
// when it cannot be read.
func fileFingerprint(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "?"
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "?"
	}
	h := sha256.New()
	parts := []*io.SectionReader{io.NewSectionReader(f, 0, fi.Size())}
	if fi.Size() > 2*fingerprintSpan {
		parts = []*io.SectionReader{io.NewSectionReader(f, 0, fingerprintSpan),
			io.NewSectionReader(f, fi.Size()-fingerprintSpan, fingerprintSpan)}
	}
	for _, p := range parts {
		if _, err := io.Copy(h, p); err != nil {
			return "?"
		}
	}
	return fmt.Sprintf("%d:%s", fi.Size(), hex.EncodeToString(h.Sum(nil)))
}

// cpuFlags returns the sorted feature flags of the host CPU from
// /proc/cpuinfo ("flags" on x86, "Features" on Arm), or "" elsewhere.
func cpuFlags() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if name = strings.TrimSpace(name); name == "flags" || name == "Features" {
			flags := strings.Fields(value)
			sort.Strings(flags)
			return strings.Join(flags, " ")
		}
	}
	return ""
}
