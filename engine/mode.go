package engine

import "fmt"

// Mode is a flush policy.
type Mode int

// The three modes.
const (
	ModeDebug  Mode = iota // flush after every op, wait, check
	ModeStrict             // flush after every op, asynchronously
	ModeFused              // flush at sync points, step boundaries and a size cap
)

var modeNames = []string{"debug", "strict", "fused"}

// String returns the mode's name.
func (m Mode) String() string { return modeNames[m] }

// ParseMode returns the mode named s.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("torchtpu: unknown mode %q (expected \"debug\", \"strict\" or \"fused\")", s)
}

// SetMode flushes pending work and switches to m.
func (e *Engine) SetMode(m Mode) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client != nil {
		e.why = whyModeSwitch
		if err := e.flushAll(); err != nil {
			return err
		}
	}
	e.mode, e.stepOpen = m, false
	return nil
}

// Mode returns the current mode.
func (e *Engine) Mode() Mode {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mode
}
