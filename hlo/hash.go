package hlo

import (
	"encoding/binary"
	"hash/maphash"
)

// Hash is a 128-bit structural hash. A parameter's hash covers its position
// and type; an op's covers its name, attributes, regions, result types and
// its operands' hashes, so two values with equal hashes are (but for a
// collision, about 2^-64 per pair) the same computation of the same
// parameters. It is computed as ops are recorded, so a repeated graph is
// recognised without printing its text. Hashes are valid within a process.
type Hash struct{ Lo, Hi uint64 }

var hashSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// hasher accumulates the bytes of one node before they are hashed.
type hasher struct{ buf []byte }

func (h *hasher) str(s string) {
	h.buf = binary.AppendUvarint(h.buf, uint64(len(s)))
	h.buf = append(h.buf, s...)
}

func (h *hasher) u64(v uint64) { h.buf = binary.LittleEndian.AppendUint64(h.buf, v) }

func (h *hasher) typ(t Type) {
	h.str(string(t.Elem))
	h.u64(uint64(len(t.Shape)))
	for _, d := range t.Shape {
		h.u64(uint64(d))
	}
}

func (h *hasher) hash(hs Hash) { h.u64(hs.Lo); h.u64(hs.Hi) }

func (h *hasher) sum() Hash {
	return Hash{maphash.Bytes(hashSeeds[0], h.buf), maphash.Bytes(hashSeeds[1], h.buf)}
}

// paramHash returns the hash of parameter number i of type t.
func paramHash(i int, t Type) Hash {
	var h hasher
	h.str("param")
	h.u64(uint64(i))
	h.typ(t)
	return h.sum()
}

// nodeHash returns the hash of n, whose operands already have theirs.
func (b *Builder) nodeHash(n *node) Hash {
	h := hasher{buf: nodeHashPrefix(b.scratch[:0], n)}
	for _, o := range n.operands {
		h.hash(o.hash())
	}
	b.scratch = h.buf
	return h.sum()
}

// nodeHashPrefix appends the bytes nodeHash hashes before the operands'
// hashes: n's name, attributes, regions and result types.
func nodeHashPrefix(buf []byte, n *node) []byte {
	h := hasher{buf: buf}
	h.str(n.op)
	h.str(n.attrs)
	h.str(n.regions)
	h.u64(uint64(len(n.results)))
	for _, r := range n.results {
		h.typ(r.T)
	}
	return h.buf
}

// hash returns v's structural hash: a parameter's, or its op's combined
// with the result's position.
func (v *Value) hash() Hash {
	if v.node == nil {
		return v.h
	}
	if len(v.node.results) == 1 {
		return v.node.h
	}
	for i, r := range v.node.results {
		if r == v {
			return Hash{v.node.h.Lo ^ uint64(i+1)*0x9e3779b97f4a7c15, v.node.h.Hi + uint64(i+1)}
		}
	}
	panic("hlo: a result not of its node")
}

// Key returns the structural hash of the function returning outs, with
// aliases (parameter index to output index, see ModuleAliased) folded in:
// equal keys print equal modules.
func (b *Builder) Key(outs []*Value, aliases map[int]int) Hash {
	var h hasher
	h.str("module")
	h.u64(uint64(len(outs)))
	for _, o := range outs {
		h.hash(o.hash())
	}
	// The alias pairs are mixed in by an order-independent sum.
	var sum uint64
	for p, o := range aliases {
		var a hasher
		a.u64(uint64(p))
		a.u64(uint64(o))
		sum += a.sum().Lo
	}
	h.u64(uint64(len(aliases)))
	h.u64(sum)
	return h.sum()
}

// ParamIndex returns the index of the parameter v (in the order parameters
// were added), or -1 when v is an op's result.
func (v *Value) ParamIndex() int {
	if v.node != nil {
		return -1
	}
	return v.param
}
