// Arithmetic on sparse COO tensors on tpu: add, sub, mul and div, with CPU's type promotion, in-place
// casting rules and errors. Everything runs as dense tpu ops on the indices and values.
#include "sparse.h"

#include <ATen/ExpandUtils.h>
#include <ATen/Functions.h>
#include <ATen/ops/add_native.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/floor_divide_native.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/sub_native.h>
#include <torch/library.h>

namespace torchtpu {
namespace {

// check_castable raises CPU's error when the result type of self and other cannot be written into out,
// as in dense_int.add_(sparse_float).
void check_castable(const at::Tensor& self, const at::Tensor& other, const at::Tensor& out, const char* op) {
  const auto common = at::result_type(self, other);
  TORCH_CHECK(c10::canCast(common, out.scalar_type()), "Can't convert result type ", common, " to output ",
              out.scalar_type(), " in ", op, " operation");
}

// add_dense_sparse is out = dense + alpha * sparse, the sparse values index-added into rows of out.
at::Tensor& add_dense_sparse(const at::Tensor& dense, const at::Tensor& sparse, const at::Scalar& alpha,
                             at::Tensor& out) {
  TORCH_CHECK(!out.is_sparse(), "add: expected a dense result for dense + sparse, got a sparse 'out'");
  if (!out.is_same(dense)) {
    out.resize_(dense.sizes());
    out.copy_(dense);
  }
  if (sparse._nnz() == 0) {
    return out;
  }
  at::Tensor values = sparse._values().to(out.scalar_type());
  at::Tensor rows = sparse_row_index(sparse);
  if (out.is_contiguous()) {
    out.view(sparse_rows_shape(sparse)).index_add_(0, rows, values, alpha);
  } else {
    at::Tensor tmp = out.contiguous();
    tmp.view(sparse_rows_shape(sparse)).index_add_(0, rows, values, alpha);
    out.copy_(tmp);
  }
  return out;
}

// add_out is add.out for sparse operands: dense + sparse into a dense out, or sparse + sparse, whose
// indices and values are concatenated (and coalesced when both operands were coalesced, as on CPU),
// or, when both hold the same indices, the values are added.
at::Tensor& add_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, at::Tensor& out) {
  TORCH_CHECK(self.sizes().equals(other.sizes()), "add: expected 'self' and 'other' to have same size, but self has size ",
              self.sizes(), " while other has size ", other.sizes(),
              " (FYI: dense-sparse addition does not currently support broadcasting)");
  if (!self.is_sparse()) {
    check_castable(self, other, out, "add");
    return add_dense_sparse(self, other, alpha, out);
  }
  TORCH_CHECK(other.is_sparse(), "add(sparse, dense) is not supported. Use add(dense, sparse) instead.");
  TORCH_CHECK(out.is_sparse(), "add: expected a sparse 'out' for sparse + sparse");
  TORCH_CHECK(self.sparse_dim() == other.sparse_dim() && self.dense_dim() == other.dense_dim(),
              "add: expected sparse tensors with the same sparse and dense dims, but got ", self.sparse_dim(), "/",
              self.dense_dim(), " and ", other.sparse_dim(), "/", other.dense_dim());
  check_castable(self, other, out, "add");
  const auto dtype = out.scalar_type();
  at::Tensor sv = self._values().to(dtype);
  at::Tensor ov = other._values().to(dtype);
  if (!(alpha.isIntegral(true) && alpha.toLong() == 1)) {
    ov = ov.mul(alpha);
  }
  at::Tensor r;
  if (other._nnz() == 0) {
    r = make_sparse(self._indices().clone(), sv.clone(), self.sizes(), self.is_coalesced());
  } else if (self._nnz() == 0) {
    r = make_sparse(other._indices().clone(), ov.is_same(other._values()) ? ov.clone() : ov, self.sizes(),
                    other.is_coalesced());
  } else if (self._nnz() == other._nnz() && at::equal(self._indices(), other._indices())) {
    // Same positions (a gradient accumulated twice from the same ids): CPU adds the values in place.
    r = make_sparse(self._indices().clone(), sv.add(ov), self.sizes(), self.is_coalesced());
  } else {
    r = make_sparse(at::cat({self._indices(), other._indices()}, 1), at::cat({sv, ov}, 0), self.sizes(), false);
    if (self.is_coalesced() && other.is_coalesced()) {
      r = coalesce_sparse(r);
    }
  }
  set_sparse(out, self.sizes(), r._indices(), r._values(), r.is_coalesced());
  return out;
}

// keep_indices is s's indices for a result written into out: the same tensor when out is s, else a copy.
at::Tensor keep_indices(const at::Tensor& s, const at::Tensor& out) {
  return out.is_same(s) ? s._indices() : s._indices().clone();
}

// set_empty makes out an empty (nnz 0, coalesced) sparse tensor of the given sizes and sparse dim.
void set_empty(const at::Tensor& out, c10::IntArrayRef sizes, int64_t sparse_dim) {
  std::vector<int64_t> vshape{0};
  vshape.insert(vshape.end(), sizes.begin() + sparse_dim, sizes.end());
  at::Tensor indices = at::empty({sparse_dim, 0}, out.options().layout(at::kStrided).dtype(at::kLong));
  set_sparse(out, sizes, indices, at::empty(vshape, out.options().layout(at::kStrided)), true);
}

// unsqueeze_rows views a per-row vector [n] as [n, 1, ...] to broadcast against values of dim ndim.
at::Tensor unsqueeze_rows(const at::Tensor& v, int64_t ndim) {
  std::vector<int64_t> shape(ndim, 1);
  shape[0] = v.size(0);
  return v.view(shape);
}

// mul_sparse_sparse is the product of two sparse tensors, with CPU's choice of stored layout. With equal
// sizes and both operands coalesced it holds exactly the positions both hold (coalesced): the flattened
// rows of x are matched in y's sorted rows by a binary search. Otherwise the result keeps every stored
// position of one operand (the uncoalesced one, else the one with fewer values), each value multiplied
// by the other operand's coalesced value there, or by 0 where it holds none.
at::Tensor& mul_sparse_sparse(const at::Tensor& x, const at::Tensor& y, at::Tensor& out) {
  const auto dtype = out.scalar_type();
  if (x.dim() == 0 || y.dim() == 0) {
    // A 0-dimensional sparse operand is a scalar: the sum of its values, or 0 when it holds none.
    const at::Tensor& z = x.dim() == 0 ? x : y;
    const at::Tensor& s = x.dim() == 0 ? y : x;
    if (z._nnz() == 0) {
      set_empty(out, s.sizes(), s.sparse_dim());
      return out;
    }
    at::Tensor values = at::mul(s._values(), z._values().sum(0)).to(dtype);
    set_sparse(out, s.sizes(), keep_indices(s, out), values, s.is_coalesced());
    return out;
  }
  const int64_t sd = x.sparse_dim();
  TORCH_CHECK(x.dim() == y.dim() && sd == y.sparse_dim() && x.sizes().slice(0, sd).equals(y.sizes().slice(0, sd)),
              "mul: the product of two sparse tensors expects equal dimensionality, number of sparse dimensions and "
              "shape of sparse dimensions, but got sizes ", x.sizes(), " (sparse_dim ", sd, ") and ", y.sizes(),
              " (sparse_dim ", y.sparse_dim(), ")");
  std::vector<int64_t> sizes = x.sizes().slice(0, sd).vec();
  const auto dense = at::infer_size(x.sizes().slice(sd), y.sizes().slice(sd));
  sizes.insert(sizes.end(), dense.begin(), dense.end());
  const bool equal_sizes = x.sizes().equals(y.sizes());
  if (equal_sizes && (x._nnz() == 0 || y._nnz() == 0)) {
    set_empty(out, sizes, sd);
    return out;
  }
  if (equal_sizes && x.is_coalesced() && y.is_coalesced()) {
    at::Tensor rx = sparse_row_index(x);
    at::Tensor ry = sparse_row_index(y);
    at::Tensor pos = at::searchsorted(ry, rx).clamp_max(y._nnz() - 1);
    at::Tensor sel = at::nonzero(ry.index_select(0, pos).eq(rx)).view(-1);
    at::Tensor values =
        at::mul(x._values().index_select(0, sel), y._values().index_select(0, pos.index_select(0, sel))).to(dtype);
    set_sparse(out, sizes, x._indices().index_select(1, sel), values, true);
    return out;
  }
  const bool x_source = x.is_coalesced() != y.is_coalesced() ? !x.is_coalesced() : x._nnz() < y._nnz();
  const at::Tensor& source = x_source ? x : y;
  const at::Tensor& other = x_source ? y : x;
  at::Tensor probe = other.is_coalesced() ? other : coalesce_sparse(other);
  at::Tensor values;
  if (probe._nnz() == 0) {
    std::vector<int64_t> vshape{source._nnz()};
    vshape.insert(vshape.end(), dense.begin(), dense.end());
    values = at::zeros(vshape, source._values().options().dtype(dtype));
  } else {
    at::Tensor rs = sparse_row_index(source);
    at::Tensor rp = sparse_row_index(probe);
    at::Tensor pos = at::searchsorted(rp, rs).clamp_max(probe._nnz() - 1);
    at::Tensor hit = rp.index_select(0, pos).eq(rs);
    at::Tensor prod = x_source ? at::mul(source._values(), probe._values().index_select(0, pos))
                               : at::mul(probe._values().index_select(0, pos), source._values());
    values = at::where(unsqueeze_rows(hit, prod.dim()), prod, at::zeros({}, prod.options())).to(dtype);
  }
  set_sparse(out, sizes, keep_indices(source, out), values, source.is_coalesced());
  return out;
}

// mul_out is mul.out with a sparse operand: the product of two sparse tensors, or the sparse values
// scaled by a 0-dimensional tensor or by the dense operand's entries at the sparse positions (the
// result keeps the sparse operand's indices).
at::Tensor& mul_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  TORCH_CHECK(out.is_sparse(), "mul: expected a sparse 'out' for a product with a sparse tensor");
  check_castable(self, other, out, "mul");
  if (self.is_sparse() && other.is_sparse()) {
    return mul_sparse_sparse(self, other, out);
  }
  const at::Tensor& s = self.is_sparse() ? self : other;
  const at::Tensor& d = self.is_sparse() ? other : self;
  at::Tensor factor = d;
  if (d.dim() != 0) {
    TORCH_CHECK(d.sizes().equals(s.sizes()),
                "mul: a dense operand of a sparse product must be 0-dimensional or of the sparse operand's size ",
                s.sizes(), ", but got size ", d.sizes());
    factor = d.reshape(sparse_rows_shape(s)).index_select(0, sparse_row_index(s));
  }
  at::Tensor values = at::mul(s._values(), factor).to(out.scalar_type());
  set_sparse(out, s.sizes(), keep_indices(s, out), values, s.is_coalesced());
  return out;
}

using DivFn = at::Tensor (*)(const at::Tensor&, const at::Tensor&);
using DivInplaceFn = at::Tensor& (*)(at::Tensor&, const at::Tensor&);
using DivOutFn = at::Tensor& (*)(const at::Tensor&, const at::Tensor&, at::Tensor&);
using DivModeFn = at::Tensor (*)(const at::Tensor&, const at::Tensor&, std::optional<c10::string_view>);
using DivModeInplaceFn = at::Tensor& (*)(at::Tensor&, const at::Tensor&, std::optional<c10::string_view>);
using DivModeOutFn = at::Tensor& (*)(const at::Tensor&, const at::Tensor&, std::optional<c10::string_view>,
                                     at::Tensor&);

}  // namespace

// add and mul are written here; sub is ATen's (add with -alpha). div and floor_divide are ATen's
// device-independent kernels: the divisor must be a scalar or a 0-dimensional dense tensor, the values
// are divided by dense ops (integers promote to the default float dtype as on CPU), and a rounding mode
// coalesces first.
TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("add.Tensor", TORCH_FN(at::native::add_sparse));
  m.impl("add_.Tensor", TORCH_FN(at::native::add_sparse_));
  m.impl("add.out", TORCH_FN(add_out));
  m.impl("sub.Tensor", TORCH_FN(at::native::sub_sparse));
  m.impl("sub_.Tensor", TORCH_FN(at::native::sub_sparse_));
  m.impl("sub.out", TORCH_FN(at::native::sub_out_sparse));
  m.impl("mul.Tensor", TORCH_FN(at::native::mul_sparse));
  m.impl("mul_.Tensor", TORCH_FN(at::native::mul_sparse_));
  m.impl("mul.out", TORCH_FN(mul_out));
  m.impl("div.Tensor", TORCH_FN(static_cast<DivFn>(at::native::div_sparse)));
  m.impl("div_.Tensor", TORCH_FN(static_cast<DivInplaceFn>(at::native::div_sparse_)));
  m.impl("div.out", TORCH_FN(static_cast<DivOutFn>(at::native::div_out_sparse_zerodim)));
  m.impl("div.Tensor_mode", TORCH_FN(static_cast<DivModeFn>(at::native::div_sparse)));
  m.impl("div_.Tensor_mode", TORCH_FN(static_cast<DivModeInplaceFn>(at::native::div_sparse_)));
  m.impl("div.out_mode", TORCH_FN(static_cast<DivModeOutFn>(at::native::div_out_sparse_zerodim)));
  m.impl("floor_divide", TORCH_FN(at::native::floor_divide_sparse));
  m.impl("floor_divide_", TORCH_FN(at::native::floor_divide_sparse_));
  m.impl("floor_divide.out", TORCH_FN(at::native::floor_divide_out_sparse_zerodim));
}

}  // namespace torchtpu
