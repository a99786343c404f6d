package engine

import (
	"fmt"
	"strings"
)

// donateWritten marks, in p's module text, each input storage the program
// overwrites as donated to its new value (tf.aliasing_output on the
// parameter): XLA then writes the new value into the input's buffer, so a
// compiled optimizer step updates parameters and state in place instead of
// holding old and new copies at once. It returns the donated input indices.
func (p *Program) donateWritten() []int {
	head, rest, ok := strings.Cut(p.text, "func.func public @main(")
	if !ok {
		return nil
	}
	sig, body, ok := strings.Cut(rest, ") -> (")
	if !ok {
		return nil
	}
	args := strings.Split(sig, ", %arg")
	var donated []int
	for k, r := range p.results {
		if r.kind != resultInput {
			continue
		}
		for pos, b := range p.binds {
			if b.kind != bindInput || b.index != r.index || pos >= len(args) || strings.Contains(args[pos], "{") {
				continue
			}
			args[pos] += fmt.Sprintf(" {tf.aliasing_output = %d : i32}", k)
			donated = append(donated, r.index)
			break
		}
	}
	if len(donated) > 0 {
		p.text = head + "func.func public @main(" + strings.Join(args, ", %arg") + ") -> (" + body
	}
	return donated
}

// releaseDonors flushes the pending graph when it reads a buffer the program
// is about to donate: a donated buffer is gone once the program has run.
func (e *Engine) releaseDonors(p *Program, sts []*Storage) error {
	for _, i := range p.donated {
		if _, used := e.d.g.paramOf[sts[i].buf]; used {
			return e.flush()
		}
	}
	return nil
}
