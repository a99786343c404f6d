package engine

import (
	"testing"

	"torchtpu/hlo"
)

func sigOf(i int) hlo.Hash {
	return hlo.Hash{Lo: uint64(i), Hi: 1}
}

// TestPlanTableKeepsTheSignaturesUsedLast checks that a loop's plans survive
// any number of other signatures put before it and while it runs, and that
// the table stays within maxPlans.
func TestPlanTableKeepsTheSignaturesUsedLast(t *testing.T) {
	ps := plans{bound: maxPlans}
	loop := []*plan{{key: "a"}, {key: "b"}, nil}
	for i := 0; i < 3*maxPlans; i++ {
		ps.put(sigOf(1000000+i), &plan{})
		if i%7 == 0 { // the loop uses its signatures among the others
			for j, p := range loop {
				if i == 0 {
					ps.put(sigOf(j), p)
				}
				got, ok := ps.get(sigOf(j))
				if !ok || got != p {
					t.Fatalf("after %d others: signature %d gave %v, %v", i, j, got, ok)
				}
			}
		}
		if n := ps.size(); n > maxPlans {
			t.Fatalf("%d plans held, bound %d", n, maxPlans)
		}
	}
	// An old signature not used since is dropped.
	if _, ok := ps.get(sigOf(1000000)); ok {
		t.Fatal("a signature unused for 3*maxPlans puts is still held")
	}
	ps.drop(sigOf(0))
	if _, ok := ps.get(sigOf(0)); ok {
		t.Fatal("a dropped signature is still held")
	}
	ps.reset()
	if _, ok := ps.get(sigOf(1)); ok {
		t.Fatal("reset kept a signature")
	}
}

// TestTapeTableKeepsTheTapesUsedLast checks the step tapes' table at its own
// bound: a tape used in every round of a loop survives maxTapes others.
func TestTapeTableKeepsTheTapesUsedLast(t *testing.T) {
	d := newDeviceState(0)
	kept := &tape{}
	d.tapes.put(1, kept)
	for i := 0; i < 4*maxTapes; i++ {
		d.tapes.put(uint64(100+i), &tape{})
		if got, ok := d.tapes.get(1); !ok || got != kept {
			t.Fatalf("after %d other tapes the loop's tape is gone", i+1)
		}
		if n := d.tapes.size(); n > maxTapes {
			t.Fatalf("%d tapes held, bound %d", n, maxTapes)
		}
	}
}
