package dispatch

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"torchtpu/hlo"
)

// lowering is one line of a family's lowering table: op called with the
// arguments args (in the notation of parseArgs) gives results of the types
// want ("2x3xf32, i64"), or an error containing the text after "error: "; the
// printed module then passes the FileCheck script check (fileCheck), and its
// return line carries the result types.
type lowering struct {
	op, args, want, check string
}

// families holds every lowering table by family name; the completeness test
// reads it.
var families = map[string][]lowering{}

// family registers a lowering table under name and returns it.
func family(name string, cases []lowering) []lowering {
	if _, dup := families[name]; dup {
		panic("two lowering tables named " + name)
	}
	families[name] = cases
	return cases
}

// runLowerings lowers each case through the builder and checks it.
func runLowerings(t *testing.T, cases []lowering) {
	t.Helper()
	for i, c := range cases {
		label := fmt.Sprintf("#%d %s(%s)", i, c.op, c.args)
		if err := lowerCase(c); err != nil {
			t.Errorf("%s: %v", label, err)
		}
	}
}

func lowerCase(c lowering) (err error) {
	e, ok := Lookup(c.op)
	if !ok {
		return fmt.Errorf("not in the table")
	}
	h := newHarness(nil)
	args, err := parseArgs(h, c.args)
	if err != nil {
		return fmt.Errorf("bad argument notation: %v", err)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	outs, rerr := e.Rule.Fn(&Ctx{Op: c.op, B: h.r.b, Args: args, R: h.r})
	if want, isErr := strings.CutPrefix(c.want, "error: "); isErr {
		if rerr == nil {
			return fmt.Errorf("got %s, want an error containing %q", types(outs), want)
		}
		if !strings.Contains(rerr.Error(), want) {
			return fmt.Errorf("error %q, want one containing %q", rerr, want)
		}
		return nil
	}
	if rerr != nil {
		return rerr
	}
	if got := types(outs); got != c.want {
		return fmt.Errorf("result types %s, want %s", got, c.want)
	}
	text, _ := h.r.b.Module(outs)
	script := c.check
	if len(outs) > 0 {
		ts := make([]string, len(outs))
		for i, o := range outs {
			ts[i] = o.T.String()
		}
		script += "\nCHECK: return {{.*}} : " + strings.Join(ts, ", ")
	}
	if err := fileCheck(script, text); err != nil {
		if testing.Verbose() {
			return fmt.Errorf("%v\n%s", err, text)
		}
		return fmt.Errorf("%v (the module uses %s; -v prints it)", err, strings.Join(opsIn(text), " "))
	}
	return nil
}

var opName = regexp.MustCompile(`"((?:stablehlo|chlo)\.[a-z_0-9]+)"`)

// opsIn lists the distinct operations of a printed module, sorted.
func opsIn(text string) []string {
	seen := map[string]bool{}
	var ops []string
	for _, m := range opName.FindAllStringSubmatch(text, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			ops = append(ops, m[1])
		}
	}
	sort.Strings(ops)
	return ops
}

// parseArgs reads the argument notation of the lowering tables, tokens
// separated by spaces:
//
//	f32[2,3]       a tensor (dtypes b, u8, i8, i16, i32, i64, f16, bf16, f32, f64, c64, c128)
//	i64[2]=0,3     an integer tensor whose values the reader reports
//	f32[2,3]/1,2   a tensor with the given strides
//	f64[]num       a Python number wrapped as a zero-dimensional CPU tensor
//	f32[]cpu       a zero-dimensional CPU tensor
//	undef          an undefined tensor (inside a list)
//	( ... )        a tensor list
//	3  true  none  an int, a bool, None
//	2.5            a float (schema float)
//	#3 #2.5 #true  Python numbers (schema Scalar); #1+2i a complex one
//	[1,2]          an int list; floats[0.5,1] a float list; bools[1,0] a bool list
//	dt:f16         a dtype
//	'mean'         a string
func parseArgs(h *harness, s string) ([]Arg, error) {
	toks := tokenize(s)
	var out []Arg
	for i := 0; i < len(toks); i++ {
		if toks[i] == "(" {
			var list []Arg
			for i++; i < len(toks) && toks[i] != ")"; i++ {
				a, err := parseArg(h, toks[i])
				if err != nil {
					return nil, err
				}
				if a.Kind != ArgTensor {
					return nil, fmt.Errorf("%s in a tensor list", toks[i])
				}
				list = append(list, a)
			}
			if i == len(toks) {
				return nil, fmt.Errorf("unclosed (")
			}
			out = append(out, h.list(list...))
			continue
		}
		a, err := parseArg(h, toks[i])
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// tokenize splits at spaces and makes parentheses outside brackets tokens of their own.
func tokenize(s string) []string {
	var toks []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			toks = append(toks, cur.String())
			cur.Reset()
		}
	}
	depth := 0
	for _, r := range s {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0 && (r == '(' || r == ')'):
			flush()
			toks = append(toks, string(r))
			continue
		case depth == 0 && (r == ' ' || r == '\t' || r == '\n'):
			flush()
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return toks
}

var dtypeNames = map[string]DType{
	"b": Bool, "u8": Uint8, "i8": Int8, "i16": Int16, "i32": Int32, "i64": Int64, "f16": Float16,
	"bf16": BFloat16, "f32": Float32, "f64": Float64, "c64": Complex64, "c128": Complex128,
}

func parseArg(h *harness, tok string) (Arg, error) {
	switch {
	case tok == "none":
		return none, nil
	case tok == "true" || tok == "false":
		return boolArg(tok == "true"), nil
	case tok == "undef":
		return Arg{Kind: ArgTensor, Tensors: []TensorMeta{{DType: Float32}}, Handles: []any{nil}}, nil
	case strings.HasPrefix(tok, "'"):
		return strArg(strings.Trim(tok, "'")), nil
	case strings.HasPrefix(tok, "dt:"):
		d, ok := dtypeNames[tok[3:]]
		if !ok {
			return Arg{}, fmt.Errorf("unknown dtype %s", tok)
		}
		return dtypeArg(d), nil
	case strings.HasPrefix(tok, "#"):
		return parseNumber(tok[1:])
	case strings.HasPrefix(tok, "["):
		xs, err := ints(strings.Trim(tok, "[]"))
		return intsArg(xs...), err
	case strings.HasPrefix(tok, "bools["):
		xs, err := ints(strings.Trim(tok[5:], "[]"))
		return Arg{Kind: ArgBoolList, Ints: xs}, err
	case strings.HasPrefix(tok, "floats["):
		a := Arg{Kind: ArgDoubleList}
		for _, f := range splitList(strings.Trim(tok[6:], "[]")) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return Arg{}, err
			}
			a.Doubles = append(a.Doubles, v)
		}
		return a, nil
	}
	if i := strings.IndexByte(tok, '['); i > 0 {
		return parseTensor(h, tok, i)
	}
	if v, err := strconv.ParseInt(tok, 10, 64); err == nil {
		return intArg(v), nil
	}
	if v, err := strconv.ParseFloat(tok, 64); err == nil {
		return Arg{Kind: ArgDouble, Double: v}, nil
	}
	return Arg{}, fmt.Errorf("cannot read %q", tok)
}

func parseNumber(s string) (Arg, error) {
	switch s {
	case "true", "false":
		a := Arg{Kind: ArgScalarBool}
		if s == "true" {
			a.Int = 1
		}
		return a, nil
	}
	if re, im, ok := strings.Cut(s, "+"); ok && strings.HasSuffix(im, "i") {
		r, err1 := strconv.ParseFloat(re, 64)
		m, err2 := strconv.ParseFloat(strings.TrimSuffix(im, "i"), 64)
		if err1 != nil || err2 != nil {
			return Arg{}, fmt.Errorf("bad complex %q", s)
		}
		return Arg{Kind: ArgScalarComplex, Double: r, Doubles: []float64{r, m}}, nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return scalarInt(v), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	return floatArg(v), err
}

// parseTensor reads dtype[sizes] with an optional =values, /strides, num or cpu.
func parseTensor(h *harness, tok string, open int) (Arg, error) {
	d, ok := dtypeNames[tok[:open]]
	if !ok {
		return Arg{}, fmt.Errorf("unknown dtype in %s", tok)
	}
	end := strings.IndexByte(tok, ']')
	if end < 0 {
		return Arg{}, fmt.Errorf("unclosed [ in %s", tok)
	}
	sizes, err := ints(tok[open+1 : end])
	if err != nil {
		return Arg{}, err
	}
	a := h.tensor(d, sizes...)
	m := &a.Tensors[0]
	switch rest := tok[end+1:]; {
	case rest == "":
	case rest == "num":
		m.Number, m.ZeroDimCPU = true, true
	case rest == "cpu":
		m.ZeroDimCPU = true
	case strings.HasPrefix(rest, "="):
		vals, err := ints(rest[1:])
		if err != nil {
			return Arg{}, err
		}
		h.r.ints[a.Handles[0].(*hlo.Value)] = vals
	case strings.HasPrefix(rest, "/"):
		if m.Strides, err = ints(rest[1:]); err != nil {
			return Arg{}, err
		}
	default:
		return Arg{}, fmt.Errorf("cannot read %q after the sizes of %s", rest, tok)
	}
	return a, nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func ints(s string) ([]int64, error) {
	xs := []int64{}
	for _, f := range splitList(s) {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, err
		}
		xs = append(xs, v)
	}
	return xs, nil
}

func TestParseArgs(t *testing.T) {
	h := newHarness(t)
	args, err := parseArgs(h, "f32[2,3] (i64[2]=4,5 undef) -1 2.5 #3 #0.5 #1+2i [0,1] dt:f16 'sum' none true f64[]num")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(args))
	for i, a := range args {
		got[i] = fmt.Sprintf("%d:%s", a.Kind, a)
	}
	want := "1:[2, 3] float32|6:[[2] int64, [] float32]|2:-1|3:2.5|10:3|11:0.5|13:(1+2i)|5:[0, 1]|2:5|7:\"sum\"|0:None|4:true|1:[] float64"
	if s := strings.Join(got, "|"); s != want {
		t.Fatalf("parsed\n%s\nwant\n%s", s, want)
	}
	if vs := h.r.ints[args[1].Handles[0].(*hlo.Value)]; fmt.Sprint(vs) != "[4 5]" {
		t.Fatalf("index values %v", vs)
	}
	if !args[12].Tensors[0].Number {
		t.Fatal("f64[]num is not a wrapped number")
	}
	for _, bad := range []string{"q32[2]", "(f32[2]", "( 3 )", "f32[2]x", "#a"} {
		if _, err := parseArgs(h, bad); err == nil {
			t.Errorf("parseArgs(%q) gave no error", bad)
		}
	}
}
