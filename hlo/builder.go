package hlo

import (
	"strconv"
	"strings"
)

// Value is an SSA value of a module under construction.
type Value struct {
	T     Type
	node  *node // nil for parameters
	param int   // parameter index when node is nil
	b     *Builder
	h     Hash // a parameter's structural hash
}

type node struct {
	op       string // "stablehlo.add"
	operands []*Value
	attrs    string   // "{...}" or ""
	regions  string   // "({...})" or ""
	results  []*Value // one value per result
	h        Hash     // structural hash (see Hash)
}

// Builder records ops for one function and prints them as a module.
// It is not safe for concurrent use.
type Builder struct {
	params  []*Value
	nodes   []*node
	depth   int // nesting depth of a region's builder (0 for a function)
	scratch []byte
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return &Builder{} }

// Param adds a function parameter of type t.
func (b *Builder) Param(t Type) *Value {
	v := &Value{T: t, param: len(b.params), b: b, h: paramHash(len(b.params), t)}
	b.params = append(b.params, v)
	return v
}

// NumParams returns the number of parameters added so far.
func (b *Builder) NumParams() int { return len(b.params) }

// Len returns the number of ops recorded so far.
func (b *Builder) Len() int { return len(b.nodes) }

// op records a single-result op.
func (b *Builder) op(name string, t Type, attrs string, operands ...*Value) *Value {
	return b.opN(name, []Type{t}, attrs, "", operands...)[0]
}

func (b *Builder) opN(name string, ts []Type, attrs, regions string, operands ...*Value) []*Value {
	for _, o := range operands {
		if o == nil || o.b != b {
			failf("%s: operand from another builder", name)
		}
	}
	var n *node
	if len(ts) == 1 { // the common case: the node, its result and the result list in one allocation
		one := &struct {
			n node
			v Value
			r [1]*Value
		}{}
		n = &one.n
		one.v = Value{T: ts[0], node: n, b: b}
		one.r[0] = &one.v
		n.results = one.r[:]
	} else {
		n = &node{}
		n.results = make([]*Value, len(ts))
		for i, t := range ts {
			n.results[i] = &Value{T: t, node: n, b: b}
		}
	}
	n.op, n.operands, n.attrs, n.regions = name, operands, attrs, regions
	n.h = b.nodeHash(n)
	b.nodes = append(b.nodes, n)
	return n.results
}

// printOp writes op n as one line of a function or region body, naming its
// result name (name#k for each of several results, which are recorded in names
// with its operands' names).
func printOp(sb *strings.Builder, indent, name string, n *node, names map[*Value]string) {
	sb.WriteString(indent)
	if len(n.results) == 1 {
		names[n.results[0]] = name
		sb.WriteString(name)
	} else {
		for k, r := range n.results {
			names[r] = name + "#" + strconv.Itoa(k)
		}
		sb.WriteString(name + ":" + strconv.Itoa(len(n.results)))
	}
	sb.WriteString(" = \"" + n.op + "\"(")
	for i, o := range n.operands {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(names[o])
	}
	sb.WriteString(")" + n.regions)
	if n.attrs != "" {
		sb.WriteString(" " + n.attrs)
	}
	sb.WriteString(" : " + signature(n) + "\n")
}

// live returns the ops that contribute to outs and, by index, the
// parameters they read.
func (b *Builder) live(outs []*Value) (map[*node]bool, []bool) {
	live := map[*node]bool{}
	paramUsed := make([]bool, len(b.params))
	var mark func(v *Value)
	mark = func(v *Value) {
		if v.node == nil {
			paramUsed[v.param] = true
			return
		}
		if live[v.node] {
			return
		}
		live[v.node] = true
		for _, o := range v.node.operands {
			mark(o)
		}
	}
	for _, o := range outs {
		mark(o)
	}
	return live, paramUsed
}

// Module prints the function returning outs as a module named "main". Ops
// that do not contribute to outs are left out, and so are unused parameters;
// used lists the indices of the parameters the printed function takes, in order.
func (b *Builder) Module(outs []*Value) (text string, used []int) {
	return b.ModuleAliased(outs, nil)
}

// ModuleAliased is Module where aliases maps a parameter's index (in the
// order parameters were added) to the output that may reuse its buffer: the
// printed argument carries tf.aliasing_output, so the compiled program
// donates that input buffer to that result. Pairs of unused parameters or of
// different types are left out.
func (b *Builder) ModuleAliased(outs []*Value, aliases map[int]int) (text string, used []int) {
	live, paramUsed := b.live(outs)
	names := map[*Value]string{}
	var sb strings.Builder
	sb.WriteString("module @torchtpu {\n  func.func public @main(")
	for i, p := range b.params {
		if !paramUsed[i] {
			continue
		}
		name := "%arg" + strconv.Itoa(len(used))
		names[p] = name
		if len(used) > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(name + ": " + p.T.String())
		if o, ok := aliases[i]; ok && o < len(outs) && outs[o].T.Equal(p.T) {
			sb.WriteString(" {tf.aliasing_output = " + strconv.Itoa(o) + " : i32}")
		}
		used = append(used, i)
	}
	sb.WriteString(") -> (")
	for i, o := range outs {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(o.T.String())
	}
	sb.WriteString(") {\n")
	next := 0
	for _, n := range b.nodes {
		if live[n] {
			printOp(&sb, "    ", "%"+strconv.Itoa(next), n, names)
			next++
		}
	}
	sb.WriteString("    return")
	for i, o := range outs {
		if i == 0 {
			sb.WriteString(" ")
		} else {
			sb.WriteString(", ")
		}
		sb.WriteString(names[o])
	}
	if len(outs) > 0 {
		sb.WriteString(" : ")
		for i, o := range outs {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(o.T.String())
		}
	}
	sb.WriteString("\n  }\n}\n")
	return sb.String(), used
}

func signature(n *node) string {
	var sb strings.Builder
	sb.WriteString("(")
	for i, o := range n.operands {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(o.T.String())
	}
	sb.WriteString(") -> ")
	if len(n.results) == 1 {
		sb.WriteString(n.results[0].T.String())
	} else {
		sb.WriteString("(")
		for i, r := range n.results {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(r.T.String())
		}
		sb.WriteString(")")
	}
	return sb.String()
}
