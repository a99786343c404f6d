package hlo

import (
	"strconv"
	"strings"
)

// region builds the body of a region op (reduce, scatter, sort) with a fresh
// builder whose parameters are the block arguments, and prints it as
// "({ ^bb0(...): ... })". Values get names private to the region.
func (b *Builder) region(argTypes []Type, body func(rb *Builder, args []*Value) []*Value) string {
	b.regions++
	prefix := "%r" + strconv.Itoa(b.regions) + "_"
	rb := NewBuilder()
	args := make([]*Value, len(argTypes))
	for i, t := range argTypes {
		args[i] = rb.Param(t)
	}
	outs := body(rb, args)
	names := map[*Value]string{}
	var sb strings.Builder
	sb.WriteString("({\n    ^bb0(")
	for i, a := range args {
		names[a] = prefix + "a" + strconv.Itoa(i)
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(names[a] + ": " + a.T.String())
	}
	sb.WriteString("):\n")
	for i, n := range rb.nodes {
		name := prefix + strconv.Itoa(i)
		mustf(len(n.results) == 1, "region ops must have one result")
		names[n.results[0]] = name
		sb.WriteString("      " + name + " = \"" + n.op + "\"(")
		for k, o := range n.operands {
			if k > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(names[o])
		}
		sb.WriteString(")")
		if n.attrs != "" {
			sb.WriteString(" " + n.attrs)
		}
		sb.WriteString(" : " + signature(n) + "\n")
	}
	sb.WriteString("      \"stablehlo.return\"(")
	var types []string
	for i, o := range outs {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(names[o])
		types = append(types, o.T.String())
	}
	sb.WriteString(") : (" + strings.Join(types, ", ") + ") -> ()\n    })")
	return sb.String()
}
