#include "sparse.h"

#include <ATen/Functions.h>
#include <ATen/SparseTensorImpl.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_dimI_native.h>
#include <ATen/ops/_dimV_native.h>
#include <ATen/ops/_embedding_bag_backward_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_sparse_mask_projection_native.h>
#include <ATen/ops/_to_dense_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/add_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/linalg_vector_norm_native.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/native_norm_native.h>
#include <ATen/ops/neg_native.h>
#include <ATen/ops/norm_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_mask_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/sub_native.h>
#include <ATen/ops/sum_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/zero_native.h>
#include <torch/library.h>

namespace torchtpu {
namespace {

// rows_shape is the shape of a dense tensor of t's sizes seen as one row per sparse position:
// [prod(sizes[:sparse_dim]), sizes[sparse_dim:]...].
std::vector<int64_t> rows_shape(const at::Tensor& t) {
  const auto sizes = t.sizes();
  const int64_t sd = t.sparse_dim();
  int64_t rows = 1;
  for (int64_t d = 0; d < sd; ++d) {
    rows *= sizes[d];
  }
  std::vector<int64_t> shape{rows};
  shape.insert(shape.end(), sizes.begin() + sd, sizes.end());
  return shape;
}

// row_index is each stored value's row in rows_shape(t): its indices flattened (row-major).
at::Tensor row_index(const at::Tensor& t) {
  at::Tensor indices = t._indices();
  const int64_t sd = t.sparse_dim();
  if (sd == 1) {
    return indices.select(0, 0);
  }
  std::vector<int64_t> strides(sd, 1);
  for (int64_t d = sd - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * t.size(d + 1);
  }
  at::Tensor mult = at::tensor(strides, at::kLong).to(indices.device()).unsqueeze(1);
  return indices.mul(mult).sum(0);
}

// unravel turns row numbers back into [len(sizes), n] indices.
at::Tensor unravel(const at::Tensor& rows, c10::IntArrayRef sizes) {
  std::vector<at::Tensor> parts(sizes.size());
  at::Tensor rest = rows;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    parts[d] = at::remainder(rest, sizes[d]);
    rest = at::floor_divide(rest, sizes[d]);
  }
  return at::stack(parts);
}

// set_sparse makes out (sparse) hold indices and values (no copy) with the given sizes and flag.
void set_sparse(const at::Tensor& out, c10::IntArrayRef sizes, const at::Tensor& indices, const at::Tensor& values,
                bool coalesced) {
  auto* impl = at::sparse::get_sparse_impl(out);
  impl->raw_resize_(indices.size(0), values.dim() - 1, sizes);
  at::sparse::alias_into_sparse(out, indices, values);
  impl->set_coalesced(coalesced);
}

at::Tensor make_sparse(const at::Tensor& indices, const at::Tensor& values, c10::IntArrayRef sizes, bool coalesced) {
  at::Tensor r = at::_sparse_coo_tensor_unsafe(indices, values, sizes, values.options().layout(at::kSparse));
  r._coalesced_(coalesced);
  return r;
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
  at::Tensor rows = row_index(sparse);
  if (out.is_contiguous()) {
    out.view(rows_shape(sparse)).index_add_(0, rows, values, alpha);
  } else {
    at::Tensor tmp = out.contiguous();
    tmp.view(rows_shape(sparse)).index_add_(0, rows, values, alpha);
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
    return add_dense_sparse(self, other, alpha, out);
  }
  TORCH_CHECK(other.is_sparse(), "add(sparse, dense) is not supported. Use add(dense, sparse) instead.");
  TORCH_CHECK(out.is_sparse(), "add: expected a sparse 'out' for sparse + sparse");
  TORCH_CHECK(self.sparse_dim() == other.sparse_dim() && self.dense_dim() == other.dense_dim(),
              "add: expected sparse tensors with the same sparse and dense dims, but got ", self.sparse_dim(), "/",
              self.dense_dim(), " and ", other.sparse_dim(), "/", other.dense_dim());
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

// mul_out is mul.out with one sparse operand: the values are scaled by a 0-dimensional tensor, or by
// the dense operand's entries at the sparse positions. The result keeps the sparse operand's indices.
at::Tensor& mul_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  TORCH_CHECK(!(self.is_sparse() && other.is_sparse()),
              "mul: the product of two sparse tensors is not supported on tpu (coalesce one and multiply by its "
              "dense form instead)");
  TORCH_CHECK(out.is_sparse(), "mul: expected a sparse 'out' for a product with a sparse tensor");
  const at::Tensor& s = self.is_sparse() ? self : other;
  const at::Tensor& d = self.is_sparse() ? other : self;
  at::Tensor factor = d;
  if (d.dim() != 0) {
    TORCH_CHECK(d.sizes().equals(s.sizes()),
                "mul: a dense operand of a sparse product must be 0-dimensional or of the sparse operand's size ",
                s.sizes(), ", but got size ", d.sizes());
    factor = d.reshape(rows_shape(s)).index_select(0, row_index(s));
  }
  at::Tensor values = at::mul(s._values(), factor).to(out.scalar_type());
  at::Tensor indices = out.is_same(s) ? s._indices() : s._indices().clone();
  set_sparse(out, s.sizes(), indices, values, s.is_coalesced());
  return out;
}

at::Tensor coalesce(const at::Tensor& self) { return coalesce_sparse(self); }

}  // namespace

at::Tensor coalesce_sparse(const at::Tensor& self) {
  const int64_t nnz = self._nnz();
  if (nnz < 2) {
    at::Tensor r = self.clone();
    r._coalesced_(true);
    return r;
  }
  const int64_t sd = self.sparse_dim();
  at::Tensor values = self._values();
  if (sd == 0) {
    return make_sparse(self._indices().narrow(1, 0, 1).clone(), values.sum(0, true), self.sizes(), true);
  }
  auto [rows, inverse] = at::_unique(row_index(self), /*sorted=*/true, /*return_inverse=*/true);
  std::vector<int64_t> shape = values.sizes().vec();
  shape[0] = rows.size(0);
  at::Tensor summed = at::zeros(shape, values.options()).index_add_(0, inverse, values);
  return make_sparse(unravel(rows, self.sizes().slice(0, sd)), summed, self.sizes(), true);
}

// The device-independent sparse kernels of ATen work on tpu unchanged: they only touch the indices and
// values through dense ops. Coalescing, addition and multiplication are the device-specific ones.
TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_sparse_coo_tensor_with_dims", TORCH_FN(at::native::new_with_dims_sparse));
  m.impl("_sparse_coo_tensor_with_dims_and_tensors", TORCH_FN(at::native::new_with_dims_and_tensor_sparse_symint));
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_sparse));
  m.impl("empty_like", TORCH_FN(at::native::empty_like_sparse_coo));
  m.impl("sparse_resize_", TORCH_FN(at::native::sparse_resize_));
  m.impl("sparse_resize_and_clear_", TORCH_FN(at::native::sparse_resize_and_clear_));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("_dimI", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_dimV", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("values", TORCH_FN(at::native::values_sparse));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_wrapper_));
  m.impl("copy_sparse_to_sparse_", TORCH_FN(at::native::copy_sparse_));
  m.impl("clone", TORCH_FN(at::native::clone_sparse));
  m.impl("zero_", TORCH_FN(at::native::zero_sparse_));
  m.impl("_to_dense", TORCH_FN(at::native::sparse_to_dense));
  m.impl("sparse_mask", TORCH_FN(at::native::sparse_mask));
  m.impl("_sparse_mask_projection", TORCH_FN(at::native::sparse_mask_projection));
  m.impl("add.Tensor", TORCH_FN(at::native::add_sparse));
  m.impl("add_.Tensor", TORCH_FN(at::native::add_sparse_));
  m.impl("add.out", TORCH_FN(add_out));
  m.impl("sub.Tensor", TORCH_FN(at::native::sub_sparse));
  m.impl("sub_.Tensor", TORCH_FN(at::native::sub_sparse_));
  m.impl("sub.out", TORCH_FN(at::native::sub_out_sparse));
  m.impl("mul.Tensor", TORCH_FN(at::native::mul_sparse));
  m.impl("mul_.Tensor", TORCH_FN(at::native::mul_sparse_));
  m.impl("mul.out", TORCH_FN(mul_out));
  m.impl("neg", TORCH_FN(at::native::neg_sparse));
  m.impl("sum", TORCH_FN(at::native::sum_coo));
  m.impl("linalg_vector_norm", TORCH_FN(at::native::linalg_vector_norm_sparse));
  m.impl("norm.ScalarOpt_dim", TORCH_FN(at::native::sparse_norm));
  m.impl("native_norm", TORCH_FN(static_cast<at::Tensor (*)(const at::Tensor&, const at::Scalar&)>(at::native::norm_sparse)));
  m.impl("native_norm.ScalarOpt_dim_dtype",
         TORCH_FN(static_cast<at::Tensor (*)(const at::Tensor&, const std::optional<at::Scalar>&, at::IntArrayRef, bool,
                                             std::optional<at::ScalarType>)>(at::native::norm_sparse)));
  m.impl("_coalesce", TORCH_FN(coalesce));
}

// _embedding_bag_backward is ATen's own router: with sparse=True it takes the sparse path (a sparse
// gradient built from dense ops), otherwise _embedding_bag_dense_backward, which has a tpu rule.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_embedding_bag_backward", TORCH_FN(at::native::_embedding_bag_backward_symint));
}

}  // namespace torchtpu
