package hlo

import "slices"

// A Fragment is a run of ops cut out of a builder so that it can be recorded
// again, into the same builder or a later one, on other inputs. An engine
// records an op's lowering once and pastes it on later calls with the same
// signature, without running the op's rule. A fragment's operands name an
// input (a value defined before the run), a parameter the run added, or a
// result of an earlier op of the run.
type Fragment struct {
	inputs   []Type
	params   []Type
	ops      []fragOp
	results  int // the ops' results, all together
	operands int // the ops' operands, all together
}

type fragOp struct {
	name, attrs, regions string
	types                []Type
	operands             []Ref
	prefix               []byte // the node hash's bytes before the operands' hashes (nodeHash)
}

// Ref names a value of a fragment.
type Ref struct {
	kind     refKind
	idx, res int32
}

type refKind uint8

const (
	refInput refKind = iota
	refParam
	refOp
)

// Cut returns the ops recorded since the builder held nodes ops and params
// parameters, and the refs of the values in want. ok is false when an op, or
// a wanted value, is none of inputs, a parameter added since, or a result of
// an op recorded since.
func (b *Builder) Cut(nodes, params int, inputs, want []*Value) (f *Fragment, refs []Ref, ok bool) {
	f = &Fragment{}
	in := map[*Value]int32{}
	for i, v := range inputs {
		f.inputs = append(f.inputs, v.T)
		if _, dup := in[v]; !dup {
			in[v] = int32(i)
		}
	}
	at := map[*node]int32{}
	ref := func(v *Value) (Ref, bool) {
		if i, ok := in[v]; ok {
			return Ref{refInput, i, 0}, true
		}
		if v.node == nil {
			return Ref{refParam, int32(v.param - params), 0}, v.param >= params && v.b == b
		}
		i, ok := at[v.node]
		if !ok {
			return Ref{}, false
		}
		for k, r := range v.node.results {
			if r == v {
				return Ref{refOp, i, int32(k)}, true
			}
		}
		return Ref{}, false
	}
	for _, p := range b.params[params:] {
		f.params = append(f.params, p.T)
	}
	for k, n := range b.nodes[nodes:] {
		op := fragOp{name: n.op, attrs: n.attrs, regions: n.regions, operands: make([]Ref, len(n.operands))}
		for _, r := range n.results {
			op.types = append(op.types, r.T)
		}
		for i, o := range n.operands {
			if op.operands[i], ok = ref(o); !ok {
				return nil, nil, false
			}
		}
		op.prefix = nodeHashPrefix(nil, n)
		at[n] = int32(k)
		f.ops = append(f.ops, op)
		f.results += len(n.results)
		f.operands += len(n.operands)
	}
	for _, v := range want {
		r, ok := ref(v)
		if !ok {
			return nil, nil, false
		}
		refs = append(refs, r)
	}
	return f, refs, true
}

// Params returns the types of the parameters the fragment's run added.
func (f *Fragment) Params() []Type { return f.params }

// Paste records f's ops into b, reading inputs (one per input of the cut,
// of the same types) and params (one per Params), and returns the values
// refs name. ok is false, and nothing is recorded, when an input or a
// parameter has another type.
func (b *Builder) Paste(f *Fragment, inputs, params []*Value, refs []Ref) (vals []*Value, ok bool) {
	if len(inputs) != len(f.inputs) || len(params) != len(f.params) {
		return nil, false
	}
	for i, v := range inputs {
		if !v.T.Equal(f.inputs[i]) {
			return nil, false
		}
	}
	for i, v := range params {
		if !v.T.Equal(f.params[i]) {
			return nil, false
		}
	}
	for _, v := range inputs {
		if v.b != b {
			failf("Paste: an input from another builder")
		}
	}
	for _, v := range params {
		if v.b != b {
			failf("Paste: a parameter from another builder")
		}
	}
	// The nodes, their values and their operand lists come from one
	// allocation each: a pasted run is many small ops.
	nodes := make([]node, len(f.ops))
	values := make([]Value, f.results)
	resPtrs := make([]*Value, f.results)
	opnds := make([]*Value, f.operands)
	first := make([]int32, len(f.ops)) // each op's first result in values
	get := func(r Ref) *Value {
		switch r.kind {
		case refInput:
			return inputs[r.idx]
		case refParam:
			return params[r.idx]
		}
		return &values[first[r.idx]+r.res]
	}
	nr, no := 0, 0
	for i := range f.ops {
		op := &f.ops[i]
		n := &nodes[i]
		n.op, n.attrs, n.regions = op.name, op.attrs, op.regions
		n.operands = opnds[no : no+len(op.operands) : no+len(op.operands)]
		no += len(op.operands)
		h := hasher{buf: append(b.scratch[:0], op.prefix...)}
		for k, r := range op.operands {
			o := get(r)
			n.operands[k] = o
			h.hash(o.hash())
		}
		b.scratch = h.buf
		n.h = h.sum()
		first[i] = int32(nr)
		n.results = resPtrs[nr : nr+len(op.types) : nr+len(op.types)]
		for k, t := range op.types {
			values[nr+k] = Value{T: t, node: n, b: b}
			n.results[k] = &values[nr+k]
		}
		nr += len(op.types)
		b.nodes = append(b.nodes, n)
	}
	vals = make([]*Value, len(refs))
	for i, r := range refs {
		vals[i] = get(r)
	}
	return vals, true
}

// Inputs returns the types of the values the fragment reads from before its
// run, in the order Paste takes them.
func (f *Fragment) Inputs() []Type { return f.inputs }

// Equal reports whether f and g record the same ops on the same inputs and
// parameters: pasted on the same values, they give values of equal
// structural hashes.
func (f *Fragment) Equal(g *Fragment) bool {
	if f == g {
		return true
	}
	if len(f.inputs) != len(g.inputs) || len(f.params) != len(g.params) || len(f.ops) != len(g.ops) {
		return false
	}
	for i, t := range f.inputs {
		if !t.Equal(g.inputs[i]) {
			return false
		}
	}
	for i, t := range f.params {
		if !t.Equal(g.params[i]) {
			return false
		}
	}
	for i := range f.ops {
		a, b := &f.ops[i], &g.ops[i]
		if string(a.prefix) != string(b.prefix) || len(a.operands) != len(b.operands) {
			return false
		}
		for k, r := range a.operands {
			if r != b.operands[k] {
				return false
			}
		}
	}
	return true
}

// ParamsAsInputs returns a copy of f, which must read no inputs, in which the
// parameters marked in asInput are inputs instead, in their order, and the
// others stay parameters, in theirs; refs, which name values of f, are
// renamed for the copy. Pasted with those inputs and parameters, the copy
// records what f records.
func (f *Fragment) ParamsAsInputs(asInput []bool, refs []Ref) (*Fragment, []Ref) {
	if len(f.inputs) != 0 || len(asInput) != len(f.params) {
		failf("ParamsAsInputs: %d inputs and %d marks for %d parameters", len(f.inputs), len(asInput), len(f.params))
	}
	g := &Fragment{ops: make([]fragOp, len(f.ops)), results: f.results, operands: f.operands}
	to := make([]Ref, len(f.params))
	for i, t := range f.params {
		if asInput[i] {
			to[i] = Ref{refInput, int32(len(g.inputs)), 0}
			g.inputs = append(g.inputs, t)
		} else {
			to[i] = Ref{refParam, int32(len(g.params)), 0}
			g.params = append(g.params, t)
		}
	}
	rename := func(r Ref) Ref {
		if r.kind == refParam {
			return to[r.idx]
		}
		return r
	}
	for i, op := range f.ops {
		op.operands = slices.Clone(op.operands)
		for k, r := range op.operands {
			op.operands[k] = rename(r)
		}
		g.ops[i] = op
	}
	out := make([]Ref, len(refs))
	for i, r := range refs {
		out[i] = rename(r)
	}
	return g, out
}
