package dispatch

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// fileCheck matches a check script against text the way LLVM's FileCheck
// does, for the three directives the lowering tests use:
//
//	CHECK: pat       pat occurs after the previous match (on a later line, or later on the same line)
//	CHECK-SAME: pat  pat occurs on the line of the previous match, after it
//	CHECK-NOT: pat   pat does not occur between the previous match and the next one
//	                 (or the end of the text when no positive directive follows)
//
// A pattern is a literal substring; {{re}} embeds a regular expression. The
// script holds one directive a line, or several on one line separated by ";".
// It returns nil when every directive holds, else an error naming the first
// that does not.
func fileCheck(script, text string) error {
	dirs, err := parseChecks(script)
	if err != nil {
		return err
	}
	pos := 0 // byte offset just past the previous match
	var nots []check
	for _, d := range dirs {
		if d.kind == "CHECK-NOT" {
			nots = append(nots, d)
			continue
		}
		region := text[pos:]
		if d.kind == "CHECK-SAME" {
			if nl := strings.IndexByte(region, '\n'); nl >= 0 {
				region = region[:nl]
			}
		}
		loc := d.re.FindStringIndex(region)
		if loc == nil {
			return fmt.Errorf("%s: %s: no match after offset %d", d.kind, d.pat, pos)
		}
		if err := checkNots(nots, text[pos:pos+loc[0]]); err != nil {
			return err
		}
		nots = nil
		pos += loc[1]
	}
	return checkNots(nots, text[pos:])
}

func checkNots(nots []check, region string) error {
	for _, n := range nots {
		if loc := n.re.FindStringIndex(region); loc != nil {
			line := region[strings.LastIndexByte(region[:loc[0]], '\n')+1:]
			if nl := strings.IndexByte(line, '\n'); nl >= 0 {
				line = line[:nl]
			}
			return fmt.Errorf("CHECK-NOT: %s: found in %q", n.pat, strings.TrimSpace(line))
		}
	}
	return nil
}

type check struct {
	kind, pat string
	re        *regexp.Regexp
}

var directive = regexp.MustCompile(`^(CHECK|CHECK-NOT|CHECK-SAME):\s*`)

// parseChecks splits a script into directives; a ";" starts a new directive
// only when a directive name follows it.
func parseChecks(script string) ([]check, error) {
	var pieces []string
	for _, line := range strings.Split(script, "\n") {
		for _, p := range strings.Split(line, ";") {
			p = strings.TrimSpace(p)
			switch {
			case p == "" && len(pieces) == 0:
			case directive.MatchString(p) || len(pieces) == 0:
				pieces = append(pieces, p)
			default:
				pieces[len(pieces)-1] += ";" + p
			}
		}
	}
	var out []check
	for _, p := range pieces {
		m := directive.FindStringSubmatch(p)
		if m == nil {
			return nil, fmt.Errorf("not a check directive: %q", p)
		}
		pat := strings.TrimSpace(p[len(m[0]):])
		if pat == "" {
			return nil, fmt.Errorf("%s with an empty pattern", m[1])
		}
		re, err := compilePattern(pat)
		if err != nil {
			return nil, err
		}
		out = append(out, check{m[1], pat, re})
	}
	return out, nil
}

// compilePattern quotes a pattern's literal text and keeps its {{re}} parts.
func compilePattern(pat string) (*regexp.Regexp, error) {
	var b strings.Builder
	for rest := pat; rest != ""; {
		i := strings.Index(rest, "{{")
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(rest))
			break
		}
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("unclosed {{ in %q", pat)
		}
		b.WriteString(regexp.QuoteMeta(rest[:i]))
		b.WriteString("(?:" + rest[i+2:i+j] + ")")
		rest = rest[i+j+2:]
	}
	return regexp.Compile(b.String())
}

func TestFileCheck(t *testing.T) {
	text := "a = add(x, y) : f32\nb = mul(a, a) : f32\nreturn b : f32\n"
	cases := []struct {
		script string
		ok     bool
	}{
		{"CHECK: add", true},
		{"CHECK: mul; CHECK: add", false}, // order matters
		{"CHECK: add; CHECK: mul; CHECK: return", true},
		{"CHECK: add; CHECK-SAME: : f32", true},
		{"CHECK: add; CHECK-SAME: mul", false}, // mul is on the next line
		{"CHECK: mul; CHECK-SAME: (a, a)", true},
		{"CHECK-NOT: sub", true},
		{"CHECK-NOT: mul", false},
		{"CHECK: add; CHECK-NOT: mul; CHECK: return", false},
		{"CHECK: mul; CHECK-NOT: add; CHECK: return", true}, // add lies before the range
		{"CHECK: return; CHECK-NOT: add", true},
		{"CHECK: {{[ab]}} = mul", true},
		{"CHECK: b = {{add|sub}}", false},
		{"CHECK: add\nCHECK-SAME: y)\nCHECK-NOT: div", true},
		{"add", false}, // not a directive
	}
	for _, c := range cases {
		err := fileCheck(c.script, text)
		if (err == nil) != c.ok {
			t.Errorf("fileCheck(%q): err = %v, want ok=%v", c.script, err, c.ok)
		}
	}
}
