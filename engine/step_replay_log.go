package engine

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"

	"torchtpu/dispatch"
)

// Why a step replay departs: under TORCHTPU_LOG=replays each departure prints one line naming the
// tape op it stopped at and the reason, and for a key that differs, the part of the key (which
// argument, which tensor, its view or its storage) and that part's words now and on the tape.

// keyMark is where one part of an op's tape key starts, noted only while replays are logged.
type keyMark struct {
	off         int
	arg, handle int  // the argument and tensor the part describes, -1 for none
	part        byte // 'o' op and default dtype, 'a' argument, 'v' tensor view, 's' tensor storage, 'l' layouts
}

// markKey notes that the part of s's key starting at off describes arg, handle, part.
func (e *Engine) markKey(s *segment, off, arg, handle int, part byte) {
	if e.logs.replays {
		s.marks = append(s.marks, keyMark{off, arg, handle, part})
	}
}

// Reasons a replay departs outside replayStep's key checks.
const (
	departFlush    = "the segment ended early (a flush with outputs of its own, or a launch that could not bind)"
	departOutside  = "the pending graph was used outside an op (a host read, a copy or a write into a storage of the segment)"
	departProgram  = "a compiled graph's run gives storages of the segment new buffers"
	departUnknown  = "an argument's storage is unknown to the engine"
	departConstant = "a compiled program's constants were released"
)

// logDeparture prints why s's replay departs at its tape op s.next, under TORCHTPU_LOG=replays.
func (e *Engine) logDeparture(s *segment, why string) {
	if !e.logs.replays {
		return
	}
	t := s.tape
	op := "the end of the tape"
	if s.next < len(t.ops) {
		op = keyOp(t.ops[s.next].hard)
	}
	fmt.Fprintf(os.Stderr, "torchtpu: step replay departs at op %d of %d (%s): %s\n", s.next+1, len(t.ops), op, why)
}

// keyOp returns the op name a tape key starts with.
func keyOp(k []byte) string {
	if len(k) < 8 {
		return "?"
	}
	n := binary.LittleEndian.Uint64(k)
	if n > uint64(len(k)-8) {
		return "?"
	}
	return string(k[8 : 8+n])
}

// keyDiff describes where the running op's hard key (s.hard, with s.marks) first differs from
// tape's (was).
func (s *segment) keyDiff(was []byte) string {
	now := s.hard
	i := 0
	for i < len(now) && i < len(was) && now[i] == was[i] {
		i++
	}
	var m keyMark
	end := len(now)
	for j, k := range s.marks {
		if k.off > i {
			end = k.off
			break
		}
		m = k
		if j+1 == len(s.marks) {
			end = len(now)
		}
	}
	var what string
	switch m.part {
	case 'o':
		if a, b := keyOp(now), keyOp(was); a != b {
			return fmt.Sprintf("another op (%s where the tape has %s)", a, b)
		}
		what = "the default dtype"
	case 'a':
		what = fmt.Sprintf("argument %d (its kind, integers, string or list lengths)", m.arg)
	case 'v':
		if a, b := viewWords(now[m.off:]), viewWords(was[min(m.off, len(was)):]); a != b {
			return fmt.Sprintf("argument %d's tensor %d: %s where the tape has %s", m.arg, m.handle, a, b)
		}
		what = fmt.Sprintf("argument %d's tensor %d: its kind (CPU, number, undefined) or host bytes", m.arg, m.handle)
	case 's':
		what = fmt.Sprintf("argument %d's tensor %d: its storage (slot, or bytes, state, dtype, shape, pending value and known range)", m.arg, m.handle)
	case 'l':
		what = "the layouts in force"
	default:
		return fmt.Sprintf("its key differs at byte %d", i)
	}
	st := m.part == 's'
	return fmt.Sprintf("its key differs in %s: now %s, on the tape %s", what, keyWords(now, m.off, end, st), keyWords(was, m.off, end, st))
}

// keyWords formats the 8-byte words of k[from:to] as signed integers, at most 16 of them; in a
// storage's part, a word with the top bit set is the slot of a storage first seen there.
func keyWords(k []byte, from, to int, storage bool) string {
	var b strings.Builder
	b.WriteByte('[')
	for n := 0; from+8 <= to && from+8 <= len(k); from, n = from+8, n+1 {
		if n == 16 {
			b.WriteString(" ...")
			break
		}
		if n > 0 {
			b.WriteByte(' ')
		}
		v := int64(binary.LittleEndian.Uint64(k[from:]))
		if storage && v < 0 {
			fmt.Fprintf(&b, "new:%d", v&^(-1<<63))
			continue
		}
		fmt.Fprint(&b, v)
	}
	b.WriteByte(']')
	return b.String()
}

// departWhy returns, under TORCHTPU_LOG=replays, why the running op departs from te: where its
// hard key differs, or numbers (the soft key, with same hard keys).
func (e *Engine) departWhy(s *segment, te *tapeOp, same bool, numbers string) string {
	if !e.logs.replays {
		return ""
	}
	if same {
		return numbers
	}
	return s.keyDiff(te.hard)
}

// viewWords describes the dtype, sizes and strides at the start of a tensor's part of a key.
func viewWords(k []byte) string {
	var w []int64
	for ; len(k) >= 8; k = k[8:] {
		w = append(w, int64(binary.LittleEndian.Uint64(k)))
	}
	list := func(i int) ([]int64, int, bool) {
		if i >= len(w) || w[i] < 0 || i+1+int(w[i]) > len(w) {
			return nil, 0, false
		}
		return w[i+1 : i+1+int(w[i])], i + 1 + int(w[i]), true
	}
	if len(w) == 0 {
		return "nothing"
	}
	sizes, i, ok1 := list(1)
	strides, _, ok2 := list(i)
	if !ok1 || !ok2 {
		return "a shorter key"
	}
	return fmt.Sprintf("%v %v strides %v", dispatch.DType(w[0]), sizes, strides)
}
