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
	var ps plans
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
		if n := len(ps.cur) + len(ps.prev); n > maxPlans {
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
