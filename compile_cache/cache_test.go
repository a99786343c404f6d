package compile_cache

import "testing"

type fake struct {
	name      string
	destroyed *[]string
}

func (f fake) Destroy() { *f.destroyed = append(*f.destroyed, f.name) }

func TestKeyIsOrderFreeAndUnambiguous(t *testing.T) {
	a := Key(Part{"module", "x"}, Part{"options", "y"})
	b := Key(Part{"options", "y"}, Part{"module", "x"})
	if a != b {
		t.Fatalf("key depends on part order: %s vs %s", a, b)
	}
	if Key(Part{"module", "ab"}, Part{"options", "c"}) == Key(Part{"module", "a"}, Part{"options", "bc"}) {
		t.Fatal("moving bytes between parts gave the same key")
	}
	if Key(Part{"module", "x"}) == Key(Part{"module", "x"}, Part{"plugin", ""}) {
		t.Fatal("an extra empty part gave the same key")
	}
	// Known value: guards against an accidental change of the encoding.
	if got := Key(Part{"a", "b"}); got != "facdde7abf1eac5b301273ab2e282f79bab0100f058833a7b8bdf9f80741e149" { // sha256 of "1:a1:b"
		t.Fatalf("Key(a=b) = %s", got)
	}
}

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	var destroyed []string
	c := NewLRU(2)
	c.Put("a", fake{"a", &destroyed})
	c.Put("b", fake{"b", &destroyed})
	if _, ok := c.Get("a"); !ok {
		t.Fatal("a missing")
	}
	c.Put("c", fake{"c", &destroyed}) // evicts b, the least recently used
	if _, ok := c.Get("b"); ok {
		t.Fatal("b still cached")
	}
	if len(destroyed) != 1 || destroyed[0] != "b" {
		t.Fatalf("destroyed = %v, want [b]", destroyed)
	}
	hits, misses, evicted := c.Stats()
	if hits != 1 || misses != 1 || evicted != 1 || c.Len() != 2 {
		t.Fatalf("stats = %d hits %d misses %d evicted, len %d", hits, misses, evicted, c.Len())
	}
}

func TestLRUSetCapEvictsOldestFirst(t *testing.T) {
	var destroyed []string
	c := NewLRU(4)
	for _, k := range []string{"a", "b", "c", "d"} {
		c.Put(k, fake{k, &destroyed})
	}
	c.Get("a") // a becomes the most recent; b is now the oldest
	c.SetCap(2)
	if len(destroyed) != 2 || destroyed[0] != "b" || destroyed[1] != "c" {
		t.Fatalf("destroyed = %v, want [b c]", destroyed)
	}
	if c.Len() != 2 || c.Cap() != 2 {
		t.Fatalf("len %d cap %d, want 2 and 2", c.Len(), c.Cap())
	}
	for _, k := range []string{"a", "d"} {
		if _, ok := c.Peek(k); !ok {
			t.Fatalf("%s evicted", k)
		}
	}
	c.SetCap(0) // at least one entry stays
	if c.Len() != 1 || c.Cap() != 1 {
		t.Fatalf("after SetCap(0): len %d cap %d, want 1 and 1", c.Len(), c.Cap())
	}
	if _, _, evicted := c.Stats(); evicted != 3 {
		t.Fatalf("evicted = %d, want 3", evicted)
	}
}
