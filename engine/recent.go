package engine

// recent is a bounded table that keeps the keys used last, in two
// generations: new keys go into the current one, which becomes the previous
// one when it holds half the bound (the previous one is then dropped), and a
// key found in the previous generation moves into the current one. So a loop
// over fewer than half the bound keys keeps its entries however many other
// keys the process used before it, and the table never holds more than the
// bound. Plans (plan.go) and step tapes (step_tape.go) use it.
type recent[K comparable, V any] struct {
	bound     int
	cur, prev map[K]V
}

// get returns the value under k and whether k is held.
func (r *recent[K, V]) get(k K) (V, bool) {
	if v, ok := r.cur[k]; ok {
		return v, true
	}
	v, ok := r.prev[k]
	if ok {
		delete(r.prev, k)
		r.put(k, v)
	}
	return v, ok
}

// put holds v under k.
func (r *recent[K, V]) put(k K, v V) {
	if r.cur == nil {
		r.cur = map[K]V{}
	}
	if _, ok := r.cur[k]; !ok && len(r.cur) >= r.bound/2 {
		r.prev, r.cur = r.cur, map[K]V{}
	}
	r.cur[k] = v
}

// drop forgets k.
func (r *recent[K, V]) drop(k K) {
	delete(r.cur, k)
	delete(r.prev, k)
}

// reset forgets every key.
func (r *recent[K, V]) reset() {
	r.cur, r.prev = nil, nil
}

// size returns how many keys are held.
func (r *recent[K, V]) size() int {
	return len(r.cur) + len(r.prev)
}
