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
#include <ATen/ops/clone_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/linalg_vector_norm_native.h>
#include <ATen/ops/native_norm_native.h>
#include <ATen/ops/neg_native.h>
#include <ATen/ops/norm_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_mask_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/sum_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/zero_native.h>
#include <torch/library.h>

namespace torchtpu {
namespace {

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

at::Tensor coalesce(const at::Tensor& self) { return coalesce_sparse(self); }

}  // namespace

std::vector<int64_t> sparse_rows_shape(const at::Tensor& t) {
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

at::Tensor sparse_row_index(const at::Tensor& t) {
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
  auto [rows, inverse] = at::_unique(sparse_row_index(self), /*sorted=*/true, /*return_inverse=*/true);
  std::vector<int64_t> shape = values.sizes().vec();
  shape[0] = rows.size(0);
  at::Tensor summed = at::zeros(shape, values.options()).index_add_(0, inverse, values);
  return make_sparse(unravel(rows, self.sizes().slice(0, sd)), summed, self.sizes(), true);
}

// The device-independent sparse kernels of ATen work on tpu unchanged: they only touch the indices and
// values through dense ops. Coalescing is the device-specific one here; arithmetic is in sparse_arith.cpp.
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
