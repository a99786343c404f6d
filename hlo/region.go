package hlo

import (
	"strconv"
	"strings"
)

// region builds the body of a region op (reduce, scatter, sort) with a fresh
// builder whose parameters are the block arguments, and prints it as
// "({ ^bb0(...): ... })".
func (b *Builder) region(argTypes []Type, body func(rb *Builder, args []*Value) []*Value) string {
	return "(" + b.block(argTypes, body) + ")"
}

// block builds one region "{ ^bb0(...): ... }" whose values get names private
// to it. Ops in the block may have several results and regions of their own.
func (b *Builder) block(argTypes []Type, body func(rb *Builder, args []*Value) []*Value) string {
	// Names depend only on the nesting depth, so a region's text is a function
	// of its contents: sibling regions may reuse names (each is its own
	// scope), and an op's text and hash do not depend on what came before it.
	prefix := "%r" + strconv.Itoa(b.depth+1) + "_"
	rb := &Builder{depth: b.depth + 1}
	args := make([]*Value, len(argTypes))
	for i, t := range argTypes {
		args[i] = rb.Param(t)
	}
	outs := body(rb, args)
	names := map[*Value]string{}
	var sb strings.Builder
	sb.WriteString("{\n    ^bb0(")
	for i, a := range args {
		names[a] = prefix + "a" + strconv.Itoa(i)
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(names[a] + ": " + a.T.String())
	}
	sb.WriteString("):\n")
	for i, n := range rb.nodes {
		printOp(&sb, "      ", prefix+strconv.Itoa(i), n, names)
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
	sb.WriteString(") : (" + strings.Join(types, ", ") + ") -> ()\n    }")
	return sb.String()
}
