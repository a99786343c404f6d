package engine

import (
	"fmt"

	"torchtpu/dispatch"
	"torchtpu/pjrt"
)

// devices holds the state of every device as a value of its own: each
// device has its own pending graph, its own cache of scalar buffers (a
// program reads buffers on the device it runs on) and its own op plans.
// Engine.d points at the state of the device ops record for (cur).
type devices struct {
	cur    int
	states map[int]*deviceState
}

// deviceState is one device's pending graph, scalar buffers and op plans.
type deviceState struct {
	index    int
	g        *graph
	scalars  map[scalarKey]*pjrt.Buffer
	scalarOf map[*pjrt.Buffer]scalarKey // the inverse of scalars
	plans    plans                      // the fast paths' plans by op signature (plan.go)
	seg      *segment                   // the ops since the last flush, as the step tape sees them (step_tape.go)
	tapes    tapes                      // step tapes by their first op's key (step_tape.go)
}

func newDeviceState(index int) *deviceState {
	return &deviceState{
		index:    index,
		g:        newGraph(),
		scalars:  map[scalarKey]*pjrt.Buffer{},
		scalarOf: map[*pjrt.Buffer]scalarKey{},
		tapes:    tapes{bound: maxTapes},
		plans:    plans{bound: maxPlans},
	}
}

// state returns device d's state, creating it on first use.
func (ds *devices) state(d int) *deviceState {
	if ds.states == nil {
		ds.states = map[int]*deviceState{}
	}
	s, ok := ds.states[d]
	if !ok {
		s = newDeviceState(d)
		ds.states[d] = s
	}
	return s
}

// useDevice makes d the device that ops record for. It does not flush: each
// device keeps its graph. A capture on another device ends (its recorded work
// stays pending there).
func (e *Engine) useDevice(d int) error {
	if d == e.dev.cur {
		return nil
	}
	if n := e.client.DeviceCount(); d < 0 || d >= n {
		return fmt.Errorf("torchtpu: invalid device index %d (%d tpu devices)", d, n)
	}
	e.leaveCaptureDevice(d)
	e.d = e.dev.state(d)
	e.dev.cur = d
	return nil
}

// Op is OpOn on the current device.
func (e *Engine) Op(op string, args []dispatch.Arg) ([]OutTensor, error) {
	return e.OpOn(op, -1, args)
}

// argsDevice returns the device of the op's tensor arguments (zero-dim CPU
// tensors aside), or fallback (the current device when -1) when there are
// none. Tensors on two devices are refused with PyTorch's message.
func (e *Engine) argsDevice(args []dispatch.Arg, fallback int) (int, error) {
	dev, found := e.dev.cur, false
	if fallback >= 0 {
		dev = fallback
	}
	for _, a := range args {
		for _, h := range a.Handles {
			t, ok := h.(*TensorDesc)
			if !ok || t == nil || t.CPU || t.Addr == 0 {
				continue
			}
			st, ok := e.storages[t.Addr]
			if !ok {
				continue
			}
			if found && st.device != dev {
				return 0, fmt.Errorf("Expected all tensors to be on the same device, but found at least two devices, tpu:%d and tpu:%d!", min(dev, st.device), max(dev, st.device))
			}
			dev, found = st.device, true
		}
	}
	return dev, nil
}

// useStorageDevice selects the device of the storage at addr (for host copies).
func (e *Engine) useStorageDevice(addr uint64) error {
	st, ok := e.storages[addr]
	if !ok {
		return nil
	}
	return e.useDevice(st.device)
}

// flushAll runs the pending graph of every device, leaving the current one selected.
func (e *Engine) flushAll() error {
	cur := e.dev.cur
	var pending []int
	for d, s := range e.dev.states {
		if d != cur && s.g.ops > 0 || len(s.g.pending) > 0 || len(s.g.extra) > 0 {
			pending = append(pending, d)
		}
	}
	for _, d := range pending {
		if err := e.useDevice(d); err != nil {
			return err
		}
		if err := e.flush(); err != nil {
			return err
		}
	}
	if err := e.useDevice(cur); err != nil {
		return err
	}
	return e.flush()
}

// graphReading returns the pending graph of any device that reads buffer b.
func (e *Engine) graphReading(b *pjrt.Buffer) *graph {
	if _, used := e.d.g.paramOf[b]; used || e.d.g.stepBufs[b] {
		return e.d.g
	}
	for _, s := range e.dev.states {
		if _, used := s.g.paramOf[b]; used || s.g.stepBufs[b] {
			return s.g
		}
	}
	return nil
}
