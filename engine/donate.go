package engine

import (
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// donateWritten returns the alias map (parameter index to output index,
// handed to the printer) that donates each input storage the program
// overwrites to its new value: XLA then writes the new value into the
// input's buffer, so a compiled optimizer step updates parameters and state
// in place instead of holding old and new copies at once. donors maps each
// aliased parameter to its input. bufInput gives the input bound to each
// buffer, vals the program's outputs; TORCHTPU_DONATE=0 turns donation off.
func (e *Engine) donateWritten(p *Program, c *capture, g *graph, bufInput map[*pjrt.Buffer]int, vals []*hlo.Value) (aliases, donors map[int]int) {
	if e.noDonate {
		return nil, nil
	}
	aliases, donors = map[int]int{}, map[int]int{}
	for k, r := range p.results {
		if r.kind != resultInput {
			continue
		}
		st := e.storages[c.inputs[r.index].Addr]
		if st == nil || st.buf == nil {
			continue
		}
		param, ok := g.paramOf[st.buf]
		if i, bound := bufInput[st.buf]; !ok || !bound || i != r.index || !param.T.Equal(vals[k].T) {
			continue
		}
		aliases[param.ParamIndex()] = k
		donors[param.ParamIndex()] = r.index
	}
	return aliases, donors
}

// releaseDonors flushes the pending graph when it reads a buffer the program
// is about to donate: a donated buffer is gone once the program has run.
func (e *Engine) releaseDonors(p *Program, sts []*Storage) error {
	if len(e.d.g.paramOf) == 0 {
		return nil // the pending graph reads no buffer
	}
	for _, i := range p.donated {
		if _, used := e.d.g.paramOf[sts[i].buf]; used {
			return e.flush()
		}
	}
	return nil
}
