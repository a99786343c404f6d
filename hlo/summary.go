package hlo

import "strings"

// Summary is what a function is compared by when a program is compiled
// again at the same call site: its parameter and result types, its op names
// in order and its constant literals, read from the builder's records, as
// ModuleAliased would print them.
type Summary struct {
	Params  []Type
	Results []Type
	Ops     []string
	Consts  []string // "dense<2.0>"
}

// Summarize returns the summary of the function returning outs: the ops
// that contribute to outs and the parameters they read.
func (b *Builder) Summarize(outs []*Value) *Summary {
	live, used := b.live(outs)
	s := &Summary{}
	for i, p := range b.params {
		if used[i] {
			s.Params = append(s.Params, p.T)
		}
	}
	for _, o := range outs {
		s.Results = append(s.Results, o.T)
	}
	for _, n := range b.nodes {
		if !live[n] {
			continue
		}
		s.Ops = append(s.Ops, n.op)
		if n.op == "stablehlo.constant" {
			s.Consts = append(s.Consts, denseLiteral(n.attrs))
		}
	}
	return s
}

// denseLiteral returns the "dense<...>" part of a constant's attributes.
func denseLiteral(attrs string) string {
	_, lit, ok := strings.Cut(attrs, "value = ")
	if !ok {
		return attrs
	}
	if i := strings.LastIndex(lit, " : "); i >= 0 {
		lit = lit[:i]
	}
	return lit
}
