package dispatch

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"torchtpu/hlo"
)

// Reader gives rules the values of tensor arguments. The engine implements it.
type Reader interface {
	// Read returns the value of the tensor named by handle (a view resolved
	// against its storage), in the current graph.
	Read(handle any) *hlo.Value
	// Scalar returns a rank-0 runtime input holding v as element type e, so a
	// changing number does not change the compiled program.
	Scalar(v float64, e hlo.Elem) *hlo.Value
	// Int64s reads the values of an integer tensor argument to the host. The
	// rule declares the argument in Needs.HostArgs: the engine reads it before
	// the rule runs, so the read never flushes the graph under the rule.
	Int64s(handle any) ([]int64, error)
	// IntNumber is Scalar for a Python integer stored in an integer element
	// type: exact beyond 2^53, and cached like Scalar.
	IntNumber(v int64, e hlo.Elem) *hlo.Value
	// Seed returns the 64-bit seed held by integer argument arg as a rank-0
	// s64 runtime input, new on every call: the rule declares the argument
	// in Needs.SeedArg, so a plan replays it with the next call's seed.
	Seed(arg int, v int64) *hlo.Value
	// Int64Tensor uploads host integers of the given shape as a runtime
	// input (indices computed on the host after a sync, e.g. from a mask).
	Int64Tensor(vals []int64, shape []int64) *hlo.Value
	// Int64Values computes an integer or bool value of the current graph and
	// reads it to the host, leaving the graph as it is (Needs.Results).
	Int64Values(v *hlo.Value) ([]int64, error)
}

// Write is a result a rule stores into a mutated argument itself: tensor
// Index of argument Arg (0 for a plain tensor argument, the position for a
// tensor list). Ops that mutate several arguments (fused optimizers,
// batch norm's running stats) use it.
type Write struct {
	Arg, Index int
	V          *hlo.Value
}

// Ctx is what a rule sees: the builder, the arguments and the reader.
type Ctx struct {
	Op   string
	B    *hlo.Builder
	Args []Arg
	R    Reader
	// Writes collects the rule's own writes into mutated arguments; the
	// engine applies them only when the rule succeeds.
	Writes []Write
	// NoHostChecks is set while a compiled program is captured: index range
	// checks that would read indices to the host are skipped (out-of-range
	// indices then give unspecified values, as in other compiled code).
	NoHostChecks bool
	// Ranges holds, by result index, the range [lo, hi] of an integer result whose
	// values the rule knows from its arguments alone (arange); the engine keeps
	// it for index checks, so indices made on the device need no read either.
	Ranges map[int][2]int64
	// Pads holds, by result index, the results the rule returns in padded
	// form (padded.go).
	Pads map[int]PadResult
	// OutArgs is the number of trailing out= arguments, which the engine
	// sets once an out= variant's rule has run: they are no inputs, so they
	// take no part in ComputesComplexHalf.
	OutArgs int
	// half says whether the rule computes complex32 (complex_half.go).
	half halfMode
	// f8 is the float8 dtype the rule computes, Undefined for none, once
	// f8Known (float8.go).
	f8      DType
	f8Known bool
}

// KnowRange records that every value of integer result i lies in [lo, hi].
func (c *Ctx) KnowRange(i int, lo, hi int64) {
	if c.Ranges == nil {
		c.Ranges = map[int][2]int64{}
	}
	c.Ranges[i] = [2]int64{lo, hi}
}

// WriteArg records that value v is to be stored into tensor index of argument arg.
func (c *Ctx) WriteArg(arg, index int, v *hlo.Value) {
	c.Writes = append(c.Writes, Write{arg, index, v})
}

// Fn is a rule: it checks the arguments (returning an error that says why
// they are wrong) and emits the op's results into c.B.
type Fn func(c *Ctx) ([]*hlo.Value, error)

// Rule is one entry of the op table.
type Rule struct {
	Name string
	Fn   Fn
	// Needs declares what the rule needs besides its arguments' device values.
	Needs Needs
	// ComplexScalar is the argument that may be a complex Python number
	// (0: none); the rule reads it through Ctx.Value.
	ComplexScalar int
	// OutKeepsShape marks out= ops that resize their out tensor only when its
	// element count differs from the result's (the range factories): an out
	// of another shape but the same count keeps its shape and receives the
	// values in row-major order.
	OutKeepsShape bool
	// TrailingSeed marks ops that draw random numbers although their schema
	// has no Generator argument (native_dropout): the shim appends a seed
	// from the device's default generator after the schema's arguments, so
	// torch.manual_seed reaches them too.
	TrailingSeed bool
	// OutNoOverlap marks out= ops whose CPU kernel refuses an out that shares
	// any memory with an input (gather, cat, ...), as ATen's assert_no_overlap;
	// other out= ops only refuse an out with internally overlapping elements.
	OutNoOverlap bool
	// OutsApart, when set, is the ValueError CPU raises when two out=
	// arguments of the op share memory (aminmax's min and max).
	OutsApart string
	// Range, when set, bounds the values of result 0 by its arguments'
	// known bounds (ranges.go), so that index checks downstream need no
	// device read.
	Range RangeFn
}

// Needs declares what a rule needs besides its arguments' device values. The
// engine reads it before lowering: it reads the declared host arguments to
// the host before the rule runs (so no read flushes the graph under a running
// rule), and it never plans a rule that reads its own results, draws random
// numbers without declaring where their seed comes from, or uploads host
// values (a replay would reuse the first call's).
// An undeclared need is an error where TORCHTPU_CHECK_NEEDS=1 (the tests set
// it); elsewhere it still runs correctly, unplanned.
type Needs struct {
	// HostArgs lists the arguments whose values the rule may read to the host
	// (indices to check, masks, lengths, offsets).
	HostArgs []int
	// Results marks a rule that reads values it computed to the host (a
	// data-dependent shape, a numerical error check).
	Results bool
	// Random marks a rule that draws random numbers (a new seed each call).
	Random bool
	// Seeded marks a Random rule whose only per-call upload is the seed in
	// argument SeedArg (Ctx.Seed): the signature leaves that argument's
	// value out and a plan uploads each call's seed, so the rule is planned.
	Seeded  bool
	SeedArg int
	// Uploads marks a rule that uploads values computed on the host.
	Uploads bool
	// Grows marks a rule that asks whether its result grows step by step
	// (PaddedReader.Grows): the answer depends on earlier calls, which no
	// signature holds.
	Grows bool
}

// Plannable reports whether a replay of the rule's first lowering may stand
// for later calls with the same signature. Host arguments alone do not
// prevent it: the engine plans such an op only when it knows their value
// ranges (and the signature holds them).
func (n Needs) Plannable() bool {
	return !n.Results && (!n.Random || n.Seeded) && !n.Uploads && !n.Grows
}

// hostArgs declares that a rule reads arguments args to the host.
func hostArgs(args ...int) Needs { return Needs{HostArgs: args} }

// randomAt declares that a rule draws random numbers from the seed in
// argument arg and uploads nothing else.
func randomAt(arg int) Needs { return Needs{Random: true, Seeded: true, SeedArg: arg} }

// readsResults declares that a rule reads values it computed (numerical error checks).
var readsResults = Needs{Results: true}

// hostIndices declares the advanced-indexing rules' needs: the index list
// (argument 1) is read to check and wrap integer indices and to turn masks
// into positions, which are uploaded.
var hostIndices = Needs{HostArgs: []int{1}, Uploads: true}

// Variant says how a table name relates to its functional rule.
type Variant int

// Variants of an op name.
const (
	Functional Variant = iota
	Inplace            // writes result 0 into argument 0
	OutVariant         // writes results into the trailing out= arguments
)

// Entry is a resolved table lookup.
type Entry struct {
	Rule    *Rule
	Variant Variant
	// Site is the file:line that registered the name (the op index, OPS.md, lists it).
	Site string
}

var table = map[string]Entry{}

// atenNames is the set of aten operator names of the torch the table was
// built against (gen_aten_names.go); derived names outside it are not registered.
var atenNames = func() map[string]bool {
	m := make(map[string]bool, len(atenNameList))
	for _, n := range atenNameList {
		m[n] = true
	}
	return m
}()

// def registers a functional rule under name and derives its in-place name
// (name with "_" after the base) and out= name ("<base>.out" unless given);
// a derived name is registered only where torch has that operator.
func def(name string, fn Fn, outNames ...string) *Rule {
	r := &Rule{Name: name, Fn: fn}
	if old, dup := table[name]; dup && old.Variant == Functional {
		panic("dispatch: two rules for " + name)
	}
	site := callerSite()
	put(name, Entry{r, Functional, site})
	base, overload, _ := strings.Cut(name, ".")
	inplace := base + "_"
	if overload != "" {
		inplace += "." + overload
	}
	if _, exists := table[inplace]; !exists && atenNames[inplace] {
		put(inplace, Entry{r, Inplace, site})
	}
	if len(outNames) == 0 {
		if o := base + ".out"; atenNames[o] {
			outNames = []string{o}
		}
	}
	for _, o := range outNames {
		if o != "" {
			if _, exists := table[o]; !exists {
				put(o, Entry{r, OutVariant, site})
			}
		}
	}
	return r
}

// defInplace registers a rule for an in-place name of its own, for an op
// whose in-place form refuses what its functional rule accepts.
func defInplace(name string, fn Fn) *Rule {
	r := &Rule{Name: name, Fn: fn}
	put(name, Entry{r, Inplace, callerSite()})
	return r
}

// alias registers name as the same functional rule as an existing one.
func alias(name string, r *Rule, v Variant) { put(name, Entry{r, v, callerSite()}) }

func put(name string, e Entry) { table[name] = e }

// callerSite returns the file:line of the registration that called def or alias.
func callerSite() string {
	_, file, line, ok := runtime.Caller(2)
	if !ok {
		return "?"
	}
	return fmt.Sprintf("%s:%d", filepath.Base(file), line)
}

// Lookup finds the rule for a full overload name such as "aten::add.Tensor".
func Lookup(name string) (Entry, bool) {
	e, ok := table[name]
	return e, ok
}

// Names returns every name in the table, sorted.
func Names() []string {
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Errorf builds a rule error; the engine adds the op name and arguments.
func Errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// ErrRunOnCPU is returned by a rule, before it reads any argument, for valid
// input that it does not lower (complex matrices for the real-only linalg
// algorithms): the call then runs on CPU like an op without a rule, counted
// as a fallback.
var ErrRunOnCPU = errors.New("runs on CPU")

// Meta returns the meta of tensor argument i.
func (c *Ctx) Meta(i int) TensorMeta { return c.Args[i].Tensors[0] }

// T returns the value of tensor argument i.
func (c *Ctx) T(i int) *hlo.Value {
	v := c.R.Read(c.Args[i].Handles[0])
	if c.Args[i].Tensors[0].DType == Float8E5M2 && float8Arithmetic(c.Op) {
		v = c.B.Float8CanonicalNaN(v)
	}
	return v
}

// List returns the values of the tensor-list argument i (nil for undefined entries).
func (c *Ctx) List(i int) []*hlo.Value {
	a := c.Args[i]
	vs := make([]*hlo.Value, len(a.Handles))
	for k, h := range a.Handles {
		if a.Tensors[k].Defined {
			vs[k] = c.R.Read(h)
		}
	}
	return vs
}

// Has reports whether argument i is present and not None.
func (c *Ctx) Has(i int) bool { return i < len(c.Args) && c.Args[i].Kind != ArgNone }

// Int returns integer argument i, or def when absent.
func (c *Ctx) Int(i int, def int64) int64 {
	if !c.Has(i) {
		return def
	}
	return c.Args[i].Int
}

// Bool returns boolean argument i, or def when absent.
func (c *Ctx) Bool(i int, def bool) bool {
	if !c.Has(i) {
		return def
	}
	return c.Args[i].Int != 0
}

// Float returns numeric argument i as float64, or def when absent.
func (c *Ctx) Float(i int, def float64) float64 {
	if !c.Has(i) {
		return def
	}
	return c.Args[i].Value()
}

// Ints returns int-list argument i, or def when absent.
func (c *Ctx) Ints(i int, def []int64) []int64 {
	if !c.Has(i) {
		return def
	}
	return c.Args[i].Ints
}

// Str returns string argument i, or def when absent.
func (c *Ctx) Str(i int, def string) string {
	if !c.Has(i) {
		return def
	}
	return c.Args[i].Str
}

// IsTensor reports whether argument i is a tensor.
func (c *Ctx) IsTensor(i int) bool { return i < len(c.Args) && c.Args[i].Kind == ArgTensor }

// DTypeArg returns the optional dtype argument i, or def when absent. A
// given dtype decides whether the op computes complex32 or float8
// (ResultDType); an op CPU does not implement for them runs on CPU for them.
func (c *Ctx) DTypeArg(i int, def DType) (DType, error) {
	if !c.Has(i) {
		return def, nil
	}
	d := DType(c.Args[i].Int)
	if !d.Supported() {
		return 0, Errorf("dtype %s is not supported on tpu", d)
	}
	c.half = halfNo
	if d == ComplexHalf {
		if !ComplexHalfOp(c.Op) {
			return 0, ErrRunOnCPU
		}
		c.half = halfYes
	}
	c.f8, c.f8Known = Undefined, true
	if d.IsFloat8() {
		if !Float8Op(c.Op) {
			return 0, ErrRunOnCPU
		}
		c.f8 = d
	}
	return d, nil
}

// Operand returns argument i as a result-type operand.
func (c *Ctx) Operand(i int) Operand { return operandOf(c.Args[i]) }

// operandOf is argument a as a type promotion operand.
func operandOf(a Arg) Operand {
	if a.Kind == ArgTensor {
		m := a.Tensors[0]
		if m.Number {
			return Operand{m.DType, KindWrapped}
		}
		if m.Rank() == 0 {
			return Operand{m.DType, KindZeroDim}
		}
		return Operand{m.DType, KindDim}
	}
	return Operand{a.ScalarDType(), KindWrapped}
}

// Value returns argument i (a tensor or a number) converted to dtype d.
func (c *Ctx) Value(i int, d DType) *hlo.Value {
	a := c.Args[i]
	if a.Kind == ArgTensor {
		return c.B.Convert(c.T(i), d.Elem())
	}
	if a.Kind == ArgScalarComplex && d.IsComplex() {
		e := d.Elem().Real()
		return c.B.Complex(c.R.Scalar(a.Doubles[0], e), c.R.Scalar(a.Doubles[1], e))
	}
	if (a.Kind == ArgScalarInt || a.Kind == ArgInt) && d.IsIntegral(false) {
		return c.R.IntNumber(a.Int, d.Elem())
	}
	return c.R.Scalar(a.Value(), d.Elem())
}
