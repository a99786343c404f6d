package engine

import (
	"fmt"
	"slices"

	"torchtpu/hlo"
)

// Recompile explanations. Each program that misses the in-memory cache is
// compared with the programs compiled before at the same call site, and the
// nearest one names what is new (the reasons below). The first program of a
// call site is "new".
//
// A call site is the flush reason plus the first op recorded into the graph
// ("eager op aten::add.Tensor", "step mark aten::mm"): both are known without
// walking Python frames, they stay put from one step to the next, and they
// separate the programs a user thinks of as "the same" (the step's graph, one
// eager op) from unrelated ones.

// progSig is what a compiled program is compared by (hlo.Summary), read
// from the builder before the module is printed.
type progSig = hlo.Summary

// maxSitePrograms bounds the programs kept per call site; maxSites the sites.
const (
	maxSitePrograms = 16
	maxSites        = 4096
)

// explainCompile compares the program compiled at site (its summary) with
// the programs compiled there before and returns the reason and a detail
// naming the first difference.
func (e *Engine) explainCompile(site string, sig *progSig) (reason, detail string) {
	if e.sites == nil || len(e.sites) >= maxSites {
		e.sites = map[string][]*progSig{}
	}
	prev := e.sites[site]
	if len(prev) == maxSitePrograms {
		prev = prev[1:]
	}
	e.sites[site] = append(prev, sig)
	if len(prev) == 0 {
		return reasonNew, "first program at this call site"
	}
	best, bestScore := prev[0], [3]int{1 << 30}
	for _, p := range prev {
		if s := distance(sig, p); less(s, bestScore) {
			best, bestScore = p, s
		}
	}
	return compare(sig, best)
}

// distance scores how far a is from b: op sequence first, then parameters,
// then constants.
func distance(a, b *progSig) [3]int {
	var d [3]int
	if !slices.Equal(a.Ops, b.Ops) {
		d[0] = 1 + abs(len(a.Ops)-len(b.Ops))
	}
	d[1] = abs(len(a.Params) - len(b.Params))
	for i := range min(len(a.Params), len(b.Params)) {
		if !a.Params[i].Equal(b.Params[i]) {
			d[1]++
		}
	}
	if !slices.Equal(a.Consts, b.Consts) {
		d[2] = 1
	}
	return d
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// The reasons a program is compiled, one vocabulary for the engine's
// programs and the compiled graphs' (python/torchtpu/compile/stats.py):
// reasonNew for the first program of a call site, then the first key part
// that differs from the nearest earlier program.
const (
	reasonNew        = "new"
	reasonGraph      = "graph"      // the op sequence, or the number of inputs or results
	reasonShapes     = "shapes"     // a dimension of an input or result
	reasonDTypes     = "dtypes"     // an element type of an input or result
	reasonConstant   = "constant"   // a constant literal
	reasonAttributes = "attributes" // op attributes (result types, dimensions, donation)
)

// Reasons lists the vocabulary of compile reasons the engine reports
// (metrics' compiles by reason, TORCHTPU_LOG=recompiles); the compiled path
// adds layout, device and guards for its own graphs.
var Reasons = []string{reasonNew, reasonGraph, reasonShapes, reasonDTypes, reasonConstant, reasonAttributes}

// compare names the first key part in which now differs from was.
func compare(now, was *progSig) (reason, detail string) {
	if !slices.Equal(now.Ops, was.Ops) {
		for i := range min(len(now.Ops), len(was.Ops)) {
			if now.Ops[i] != was.Ops[i] {
				return reasonGraph, fmt.Sprintf("op %d is %s, was %s", i, now.Ops[i], was.Ops[i])
			}
		}
		return reasonGraph, fmt.Sprintf("%d ops, was %d", len(now.Ops), len(was.Ops))
	}
	if r, d := typeChange("input", now.Params, was.Params); r != "" {
		return r, d
	}
	if r, d := typeChange("result", now.Results, was.Results); r != "" {
		return r, d
	}
	for i := range min(len(now.Consts), len(was.Consts)) {
		if now.Consts[i] != was.Consts[i] {
			return reasonConstant, fmt.Sprintf("constant %d is %s, was %s", i, now.Consts[i], was.Consts[i])
		}
	}
	return reasonAttributes, "same types, ops and constants; op attributes differ"
}

// typeChange names the first of the types now that differs from was: a
// change of element type is "dtypes", of dimensions "shapes".
func typeChange(what string, now, was []hlo.Type) (reason, detail string) {
	for i := range min(len(now), len(was)) {
		if !now[i].Equal(was[i]) {
			reason = reasonShapes
			if now[i].Elem != was[i].Elem {
				reason = reasonDTypes
			}
			return reason, fmt.Sprintf("%s %d is %s, was %s", what, i, now[i], was[i])
		}
	}
	if len(now) != len(was) {
		return reasonGraph, fmt.Sprintf("%d %ss, was %d", len(now), what, len(was))
	}
	return "", ""
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
