package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"torchtpu/compile_cache"
	"torchtpu/pjrt"
)

type dropped struct{ n *int }

func (d dropped) Destroy() { *d.n++ }

func filledLRU(n int, drops *int) *compile_cache.LRU {
	c := compile_cache.NewLRU(programsInMemory)
	for i := range n {
		c.Put(fmt.Sprint(i), dropped{drops})
	}
	return c
}

func TestMapBudgetLeavesTheCacheAloneWellUnderTheLimit(t *testing.T) {
	drops := 0
	c := filledLRU(100, &drops)
	b := &mapBudget{limit: pjrt.MemoryMappings() * 8, full: programsInMemory}
	for range 200 {
		if err := b.admit(c); err != nil {
			t.Fatal(err)
		}
	}
	if drops != 0 || c.Len() != 100 || c.Cap() != programsInMemory {
		t.Fatalf("dropped %d, len %d, cap %d: want 0, 100, %d", drops, c.Len(), c.Cap(), programsInMemory)
	}
	if b.last <= 0 {
		t.Fatal("the mappings were never counted")
	}
}

func TestMapBudgetDropsAQuarterAboveHalfTheLimit(t *testing.T) {
	drops := 0
	c := filledLRU(100, &drops)
	n := pjrt.MemoryMappings()
	b := &mapBudget{limit: n * 3 / 2, full: programsInMemory, last: n} // over half: counted on every program
	if err := b.admit(c); err != nil {
		t.Fatalf("at two thirds of the limit: %v", err)
	}
	if drops != 25 || c.Len() != 75 || c.Cap() != 75 || b.shrinks != 1 {
		t.Fatalf("dropped %d, len %d, cap %d, shrinks %d: want 25, 75, 75, 1", drops, c.Len(), c.Cap(), b.shrinks)
	}
	// Well under the limit again, the capacity grows back by a quarter per count.
	b.limit, b.last, b.since = n*8, 0, 63
	if err := b.admit(c); err != nil {
		t.Fatal(err)
	}
	if c.Cap() != 75*5/4+1 {
		t.Fatalf("cap %d after a count at an eighth of the limit, want %d", c.Cap(), 75*5/4+1)
	}
}

func TestMapBudgetRefusesNearTheLimit(t *testing.T) {
	drops := 0
	c := filledLRU(200, &drops)
	const limit = 20 // below what any process holds, even after a collection
	b := &mapBudget{limit: limit, full: programsInMemory, last: limit}
	err := b.admit(c)
	var me *MapLimitError
	if !errors.As(err, &me) {
		t.Fatalf("admit at the limit = %v, want a MapLimitError", err)
	}
	if me.Limit != limit || me.Maps <= limit || me.Cached != minPrograms {
		t.Fatalf("error fields %+v (limit %d)", *me, limit)
	}
	for _, want := range []string{"memory mappings", "vm.max_map_count", "torch._dynamo.reset()"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %s", want, err)
		}
	}
	// Before refusing, the cache dropped all it could: it was halved down to its floor.
	if c.Len() != minPrograms || drops != 200-minPrograms {
		t.Fatalf("len %d, %d dropped; want %d and %d", c.Len(), drops, minPrograms, 200-minPrograms)
	}
}

func TestMapBudgetOffWithoutALimit(t *testing.T) {
	drops := 0
	c := filledLRU(10, &drops)
	if err := (&mapBudget{}).admit(c); err != nil || drops != 0 {
		t.Fatalf("admit without a limit: %v, %d dropped", err, drops)
	}
	var nilBudget *mapBudget
	if err := nilBudget.admit(c); err != nil {
		t.Fatal(err)
	}
}
