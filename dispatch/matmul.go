package dispatch

import (
	"fmt"
	"strings"

	"torchtpu/hlo"
)

// cppName is the C++ type name PyTorch prints for d in some dtype errors.
func cppName(d DType) string {
	switch d {
	case Uint8:
		return "unsigned char"
	case Int8:
		return "signed char"
	case Int16:
		return "short int"
	case Int32:
		return "int"
	case Int64:
		return "long int"
	case Float16:
		return "c10::Half"
	case BFloat16:
		return "c10::BFloat16"
	case Float32:
		return "float"
	case Float64:
		return "double"
	case Bool:
		return "bool"
	case Complex64:
		return "c10::complex<float>"
	case Complex128:
		return "c10::complex<double>"
	}
	if d.IsFloat8() {
		return "c10::" + scalarTypeName(d)
	}
	return d.String()
}

// scalarTypeName is c10's ScalarType name of d ("Float", "Long").
func scalarTypeName(d DType) string {
	switch d {
	case Uint8:
		return "Byte"
	case Int8:
		return "Char"
	case Int16:
		return "Short"
	case Int32:
		return "Int"
	case Int64:
		return "Long"
	case Float16:
		return "Half"
	case BFloat16:
		return "BFloat16"
	case Float32:
		return "Float"
	case Float64:
		return "Double"
	case Bool:
		return "Bool"
	case UInt16:
		return "UInt16"
	case UInt32:
		return "UInt32"
	case UInt64:
		return "UInt64"
	case Complex64:
		return "ComplexFloat"
	case Complex128:
		return "ComplexDouble"
	case ComplexHalf:
		return "ComplexHalf"
	case Float8E5M2:
		return "Float8_e5m2"
	case Float8E4M3FN:
		return "Float8_e4m3fn"
	case Float8E5M2FNUZ:
		return "Float8_e5m2fnuz"
	case Float8E4M3FNUZ:
		return "Float8_e4m3fnuz"
	}
	return d.String()
}

// notImplemented is PyTorch's error for a kernel without a dtype.
func notImplemented(kernel string, d DType) error {
	return &KindedError{NotImplementedErr, fmt.Sprintf("\"%s\" not implemented for '%s'", kernel, scalarTypeName(d))}
}

func dimsX(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, "x")
}

// expandTo broadcasts x (of meta m) to shape as Tensor.expand does: the rank
// may not shrink and non-singleton sizes must match.
func expandTo(b *hlo.Builder, x *hlo.Value, m TensorMeta, shape []int64) (*hlo.Value, error) {
	if m.Rank() > len(shape) {
		return nil, Errorf("expand(%s, size=%s): the number of sizes provided (%d) must be greater or equal to the number of dimensions in the tensor (%d)",
			m.DType, shapeString(shape), len(shape), m.Rank())
	}
	off := len(shape) - m.Rank()
	for i, s := range m.Sizes {
		if s != 1 && s != shape[off+i] {
			return nil, Errorf("The expanded size of the tensor (%d) must match the existing size (%d) at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
				shape[off+i], s, off+i, shapeString(shape), shapeString(m.Sizes))
		}
	}
	return b.BroadcastTo(x, shape), nil
}

// scaleBy multiplies x by the runtime scalar v unless v is 1.
func scaleBy(c *Ctx, x *hlo.Value, v float64) *hlo.Value {
	if v == 1 {
		return x
	}
	if x.T.Elem == hlo.Pred {
		if v != 0 {
			return x
		}
		return c.B.BroadcastTo(c.B.Scalar(hlo.Pred, 0), x.T.Shape)
	}
	return c.B.Mul(x, c.B.BroadcastTo(c.R.Scalar(v, x.T.Elem), x.T.Shape))
}

// addScaledTo returns addScaled's sum rounded once to dtype d, from a
// product accumulated in accumElem(d) (float32 for the half types, as CPU's
// addmm and baddbmm kernels compute).
func addScaledTo(c *Ctx, d DType, selfIdx int, prod *hlo.Value, beta, alpha float64) ([]*hlo.Value, error) {
	r, err := addScaled(c, selfIdx, prod, beta, alpha)
	if err != nil {
		return nil, err
	}
	if r.T.Elem != d.Elem() {
		r = c.B.Convert(r, d.Elem())
	}
	return []*hlo.Value{r}, nil
}

// addScaled returns beta*self + alpha*prod with self expanded to prod's
// shape and converted to prod's element type; beta == 0 ignores self (NaN
// and Inf in it do not propagate).
func addScaled(c *Ctx, selfIdx int, prod *hlo.Value, beta, alpha float64) (*hlo.Value, error) {
	self, err := expandTo(c.B, c.T(selfIdx), c.Meta(selfIdx), prod.T.Shape)
	if err != nil {
		return nil, err
	}
	if self.T.Elem != prod.T.Elem {
		self = c.B.Convert(self, prod.T.Elem)
	}
	prod = scaleBy(c, prod, alpha)
	if beta == 0 {
		return prod, nil
	}
	self = scaleBy(c, self, beta)
	if prod.T.Elem == hlo.Pred {
		return c.B.Or(self, prod), nil
	}
	return c.B.Add(self, prod), nil
}

// checkMatrices checks mm's operands: both 2-D, inner sizes equal, same dtype.
func checkMatrices(op string, a, b TensorMeta) error {
	if a.Rank() != 2 {
		return Errorf("%s: self must be a matrix, got %d-D tensor", op, a.Rank())
	}
	if b.Rank() != 2 {
		return Errorf("%s: mat2 must be a matrix, got %d-D tensor", op, b.Rank())
	}
	if a.Sizes[1] != b.Sizes[0] {
		return Errorf("%s: mat1 and mat2 shapes cannot be multiplied (%s and %s)", op, dimsX(a.Sizes), dimsX(b.Sizes))
	}
	return nil
}

func mmRule(c *Ctx) ([]*hlo.Value, error) {
	a, b := c.Meta(0), c.Meta(1)
	if err := checkMatrices("mm", a, b); err != nil {
		return nil, err
	}
	if a.DType != b.DType {
		return nil, Errorf("expected m1 and m2 to have the same dtype, but got: %s != %s", cppName(a.DType), cppName(b.DType))
	}
	if a.DType == Bool {
		return nil, notImplemented("addmm_impl_cpu_", Bool)
	}
	return []*hlo.Value{c.B.DotGeneral(c.T(0), c.T(1), nil, nil, []int64{1}, []int64{0})}, nil
}

func addmmRule(c *Ctx) ([]*hlo.Value, error) {
	s, a, b := c.Meta(0), c.Meta(1), c.Meta(2)
	if err := checkMatrices("addmm", a, b); err != nil {
		return nil, err
	}
	if s.DType != b.DType {
		return nil, Errorf("self and mat2 must have the same dtype, but got %s and %s", scalarTypeName(s.DType), scalarTypeName(b.DType))
	}
	if a.DType != b.DType {
		return nil, Errorf("expected m1 and m2 to have the same dtype, but got: %s != %s", cppName(a.DType), cppName(b.DType))
	}
	if a.DType == Bool {
		return nil, notImplemented("addmm_impl_cpu_", Bool)
	}
	prod := c.B.DotGeneralTo(accumElem(a.DType), c.T(1), c.T(2), nil, nil, []int64{1}, []int64{0})
	return addScaledTo(c, a.DType, 0, prod, c.Float(3, 1), c.Float(4, 1))
}

// addmmActivation is _addmm_activation(self, mat1, mat2, *, beta, alpha,
// use_gelu): addmm followed by relu, or by the exact gelu when use_gelu is set,
// as CPU's kernel applies them in place to addmm's result (the feed-forward
// half of nn.TransformerEncoderLayer's inference fast path).
func addmmActivation(c *Ctx) ([]*hlo.Value, error) {
	gelu := c.Bool(5, false)
	if gelu && !c.Meta(1).DType.IsFloat() {
		return nil, ErrRunOnCPU // CPU's gelu refuses the dtype
	}
	r, err := addmmRule(c)
	if err != nil {
		return nil, err
	}
	if gelu {
		return []*hlo.Value{upcast(func(b *hlo.Builder, x *hlo.Value) *hlo.Value { return geluOf(b, x, false) })(c.B, r[0])}, nil
	}
	return []*hlo.Value{reluOf(c.B, r[0])}, nil
}

// checkBatches checks bmm's operands.
func checkBatches(a, b TensorMeta) error {
	if a.Rank() != 3 {
		return Errorf("batch1 must be a 3D tensor")
	}
	if b.Rank() != 3 {
		return Errorf("batch2 must be a 3D tensor")
	}
	if b.Sizes[0] != a.Sizes[0] || b.Sizes[1] != a.Sizes[2] {
		return Errorf("Expected size for first two dimensions of batch2 tensor to be: [%d, %d] but got: [%d, %d].",
			a.Sizes[0], a.Sizes[2], b.Sizes[0], b.Sizes[1])
	}
	return nil
}

func bmmProduct(c *Ctx, i, j int) *hlo.Value {
	return c.B.DotGeneral(c.T(i), c.T(j), []int64{0}, []int64{0}, []int64{2}, []int64{1})
}

// bmmProductTo is bmmProduct accumulated in out.
func bmmProductTo(c *Ctx, out hlo.Elem, i, j int) *hlo.Value {
	return c.B.DotGeneralTo(out, c.T(i), c.T(j), []int64{0}, []int64{0}, []int64{2}, []int64{1})
}

func bmmRule(c *Ctx) ([]*hlo.Value, error) {
	a, b := c.Meta(0), c.Meta(1)
	if err := checkBatches(a, b); err != nil {
		return nil, err
	}
	if a.DType != b.DType {
		return nil, Errorf("expected scalar type %s but found %s", scalarTypeName(a.DType), scalarTypeName(b.DType))
	}
	if a.DType == Bool {
		return nil, notImplemented("bmm", Bool)
	}
	return []*hlo.Value{bmmProduct(c, 0, 1)}, nil
}

func baddbmmRule(c *Ctx) ([]*hlo.Value, error) {
	s, a, b := c.Meta(0), c.Meta(1), c.Meta(2)
	if err := checkBatches(a, b); err != nil {
		return nil, err
	}
	if s.DType != a.DType || a.DType != b.DType {
		return nil, Errorf("Input dtypes must be the same, got: input %s, batch1: %s, batch2: %s", cppName(s.DType), cppName(a.DType), cppName(b.DType))
	}
	if a.DType == Bool {
		return nil, notImplemented("baddbmm", Bool)
	}
	return addScaledTo(c, a.DType, 0, bmmProductTo(c, accumElem(a.DType), 1, 2), c.Float(3, 1), c.Float(4, 1))
}

// addbmmRule is addbmm(self, batch1, batch2, *, beta, alpha): self plus the
// sum over the batch of the matrix products, one contraction over batch and k.
func addbmmRule(c *Ctx) ([]*hlo.Value, error) {
	s, a, b := c.Meta(0), c.Meta(1), c.Meta(2)
	if err := checkBatches(a, b); err != nil {
		return nil, err
	}
	if s.DType != a.DType || a.DType != b.DType {
		return nil, Errorf("Input dtypes must be the same, got: input %s, batch1: %s, batch2: %s", cppName(s.DType), cppName(a.DType), cppName(b.DType))
	}
	if a.DType == Bool {
		return nil, notImplemented("addbmm", Bool)
	}
	prod := c.B.DotGeneral(c.T(1), c.T(2), nil, nil, []int64{0, 2}, []int64{0, 1})
	return addScaledTo(c, a.DType, 0, prod, c.Float(3, 1), c.Float(4, 1))
}

// checkMV checks addmv's operands; input is the meta of the added vector.
func checkMV(input, mat, vec TensorMeta) error {
	if mat.Rank() != 2 || vec.Rank() != 1 || input.Rank() > 1 {
		return Errorf("vector + matrix @ vector expected, got %d, %d, %d", input.Rank(), mat.Rank(), vec.Rank())
	}
	n := int64(1)
	if input.Rank() == 1 {
		n = input.Sizes[0]
	}
	if mat.Sizes[1] != vec.Sizes[0] || (n != mat.Sizes[0] && n != 1) {
		return Errorf("size mismatch, got input (%d), mat (%s), vec (%d)", n, dimsX(mat.Sizes), vec.Sizes[0])
	}
	if input.DType != mat.DType || mat.DType != vec.DType {
		return Errorf("addmv input tensors must have the same dtype, but got %s, %s, and %s",
			scalarTypeName(input.DType), scalarTypeName(mat.DType), scalarTypeName(vec.DType))
	}
	if mat.DType == Bool {
		return notImplemented("addmv_impl_cpu", Bool)
	}
	return nil
}

func mvRule(c *Ctx) ([]*hlo.Value, error) {
	mat, vec := c.Meta(0), c.Meta(1)
	input := TensorMeta{DType: vec.DType, Defined: true}
	if mat.Rank() >= 1 {
		input.Sizes = []int64{mat.Sizes[0]}
	} else {
		input.Sizes = []int64{1}
	}
	if mat.Rank() != 2 || vec.Rank() != 1 {
		return nil, Errorf("vector + matrix @ vector expected, got 1, %d, %d", mat.Rank(), vec.Rank())
	}
	if err := checkMV(input, mat, vec); err != nil {
		return nil, err
	}
	return []*hlo.Value{c.B.DotGeneral(c.T(0), c.T(1), nil, nil, []int64{1}, []int64{0})}, nil
}

func addmvRule(c *Ctx) ([]*hlo.Value, error) {
	if err := checkMV(c.Meta(0), c.Meta(1), c.Meta(2)); err != nil {
		return nil, err
	}
	prod := c.B.DotGeneral(c.T(1), c.T(2), nil, nil, []int64{1}, []int64{0})
	r, err := addScaled(c, 0, prod, c.Float(3, 1), c.Float(4, 1))
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{r}, nil
}

func dotRule(c *Ctx) ([]*hlo.Value, error) {
	a, b := c.Meta(0), c.Meta(1)
	if a.Rank() != 1 || b.Rank() != 1 {
		return nil, Errorf("1D tensors expected, but got %dD and %dD tensors", a.Rank(), b.Rank())
	}
	if a.DType != b.DType {
		return nil, Errorf("dot : expected both vectors to have same dtype, but found %s and %s", scalarTypeName(a.DType), scalarTypeName(b.DType))
	}
	if a.Sizes[0] != b.Sizes[0] {
		return nil, Errorf("inconsistent tensor size, expected tensor [%d] and src [%d] to have the same number of elements, but got %d and %d elements respectively",
			a.Sizes[0], b.Sizes[0], a.Sizes[0], b.Sizes[0])
	}
	if a.DType == Bool {
		return nil, notImplemented("dot", Bool)
	}
	return []*hlo.Value{c.B.DotGeneral(c.T(0), c.T(1), nil, nil, []int64{0}, []int64{0})}, nil
}

func init() {
	def("aten::mm", mmRule)
	def("aten::bmm", bmmRule)
	def("aten::addmm", addmmRule)
	def("aten::_addmm_activation", addmmActivation)
	def("aten::baddbmm", baddbmmRule)
	def("aten::mv", mvRule)
	def("aten::addmv", addmvRule)
	def("aten::dot", dotRule)
	def("aten::vdot", vdotRule)
	def("aten::addbmm", addbmmRule)
}
