package engine

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Recompile explanations. Each program that misses the in-memory cache is
// compared with the programs compiled before at the same call site, and the
// nearest one names what is new: "shapes", "dtypes", "op sequence", "a
// constant", or "attributes" (result types, op attributes, donation). The
// first program of a call site is "new".
//
// A call site is the flush reason plus the first op recorded into the graph
// ("eager op aten::add.Tensor", "step mark aten::mm"): both are known without
// walking Python frames, they stay put from one step to the next, and they
// separate the programs a user thinks of as "the same" (the step's graph, one
// eager op) from unrelated ones.

// progSig is what a compiled module is compared by, read from its text.
type progSig struct {
	args   []string // parameter types, "tensor<2x8xf32>"
	res    []string // result types
	ops    []string // op names in order
	consts []string // constant literals in order
}

var (
	reArg   = regexp.MustCompile(`%arg\d+: (tensor<[^>]*>)`)
	reOp    = regexp.MustCompile(`= "([A-Za-z0-9_.]+)"\(`)
	reType  = regexp.MustCompile(`tensor<[^>]*>`)
	reConst = regexp.MustCompile(`"stablehlo\.constant"\(\) \{value = (dense<[^>]*>)`)
)

// signatureOf reads the parameter types, op names and constants of text.
func signatureOf(text string) *progSig {
	header, body, _ := strings.Cut(text, ") -> (")
	results, body, _ := strings.Cut(body, ") {")
	s := &progSig{}
	for _, m := range reArg.FindAllStringSubmatch(header, -1) {
		s.args = append(s.args, m[1])
	}
	for _, m := range reType.FindAllString(results, -1) {
		s.res = append(s.res, m)
	}
	for _, m := range reOp.FindAllStringSubmatch(body, -1) {
		s.ops = append(s.ops, m[1])
	}
	for _, m := range reConst.FindAllStringSubmatch(body, -1) {
		s.consts = append(s.consts, m[1])
	}
	return s
}

// maxSitePrograms bounds the programs kept per call site; maxSites the sites.
const (
	maxSitePrograms = 16
	maxSites        = 4096
)

// explainCompile compares the module text compiled at site with the
// programs compiled there before and returns the reason and a detail
// naming the first difference.
func (e *Engine) explainCompile(site, text string) (reason, detail string) {
	sig := signatureOf(text)
	if e.sites == nil || len(e.sites) >= maxSites {
		e.sites = map[string][]*progSig{}
	}
	prev := e.sites[site]
	if len(prev) == maxSitePrograms {
		prev = prev[1:]
	}
	e.sites[site] = append(prev, sig)
	if len(prev) == 0 {
		return "new", "first program at this call site"
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
	if !slices.Equal(a.ops, b.ops) {
		d[0] = 1 + abs(len(a.ops)-len(b.ops))
	}
	d[1] = abs(len(a.args) - len(b.args))
	for i := range min(len(a.args), len(b.args)) {
		if a.args[i] != b.args[i] {
			d[1]++
		}
	}
	if !slices.Equal(a.consts, b.consts) {
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

// compare names the first key part in which now differs from was.
func compare(now, was *progSig) (reason, detail string) {
	if !slices.Equal(now.ops, was.ops) {
		for i := range min(len(now.ops), len(was.ops)) {
			if now.ops[i] != was.ops[i] {
				return "op sequence", fmt.Sprintf("op %d is %s, was %s", i, now.ops[i], was.ops[i])
			}
		}
		return "op sequence", fmt.Sprintf("%d ops, was %d", len(now.ops), len(was.ops))
	}
	if r, d := typeChange("input", now.args, was.args); r != "" {
		return r, d
	}
	if r, d := typeChange("result", now.res, was.res); r != "" {
		return r, d
	}
	for i := range min(len(now.consts), len(was.consts)) {
		if now.consts[i] != was.consts[i] {
			return "a constant", fmt.Sprintf("constant %d is %s, was %s", i, now.consts[i], was.consts[i])
		}
	}
	return "attributes", "same types, ops and constants; op attributes differ"
}

// typeChange names the first of the types now that differs from was: a
// change of element type is "dtypes", of dimensions "shapes".
func typeChange(what string, now, was []string) (reason, detail string) {
	for i := range min(len(now), len(was)) {
		if now[i] != was[i] {
			reason = "shapes"
			if elemOf(now[i]) != elemOf(was[i]) {
				reason = "dtypes"
			}
			return reason, fmt.Sprintf("%s %d is %s, was %s", what, i, now[i], was[i])
		}
	}
	if len(now) != len(was) {
		return "op sequence", fmt.Sprintf("%d %ss, was %d", len(now), what, len(was))
	}
	return "", ""
}

// elemOf returns the element type of a tensor type, "f32" of "tensor<2x8xf32>".
func elemOf(t string) string {
	t = strings.TrimSuffix(strings.TrimPrefix(t, "tensor<"), ">")
	if i := strings.LastIndexByte(t, 'x'); i >= 0 {
		return t[i+1:]
	}
	return t
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
