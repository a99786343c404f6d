// Products of sparse COO matrices with dense ones on tpu (torch.sparse.mm, sparse @ dense, addmm with a sparse
// mat1), with CPU's checks. A product gathers the dense rows each stored value meets and index-adds them into the
// result's rows: dense tpu ops, differentiable through the dense operand. Products with other sparse operands (two
// sparse matrices, a sparse self or mat2 in addmm) run on the CPU.
#include "sparse.h"

#include <ATen/Functions.h>
#include <torch/library.h>

namespace torchtpu {
namespace {

// sparse_dense_mm is sparse (m x k, two sparse dims) times dense (k x n): out[i] += v * dense[j] for every stored
// (i, j, v).
at::Tensor sparse_dense_mm(const at::Tensor& sparse, const at::Tensor& dense) {
  TORCH_CHECK(sparse.sparse_dim() == 2 && sparse.dense_dim() == 0,
              "addmm: matrices expected, got ", sparse.sparse_dim(), "D, ", dense.dim(), "D tensors");
  TORCH_CHECK(dense.dim() == 2, "addmm: matrices expected, got ", sparse.dim(), "D, ", dense.dim(), "D tensors");
  TORCH_CHECK(dense.size(0) == sparse.size(1), "addmm: Argument #3 (dense): Expected dim 0 size ", sparse.size(1),
              ", got ", dense.size(0));
  TORCH_CHECK(sparse.scalar_type() == dense.scalar_type(), "expected scalar type ", sparse.scalar_type(),
              " but found ", dense.scalar_type());
  at::Tensor out = at::zeros({sparse.size(0), dense.size(1)}, dense.options());
  if (sparse._nnz() == 0) {
    return out;
  }
  const at::Tensor indices = sparse._indices();
  const at::Tensor rows = indices.select(0, 0);
  const at::Tensor cols = indices.select(0, 1);
  const at::Tensor terms = dense.index_select(0, cols).mul(sparse._values().unsqueeze(1));
  return out.index_add_(0, rows, terms);
}

at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2) {
  if (self.is_sparse() && mat2.is_sparse()) {
    return at::mm(self.cpu(), mat2.cpu()).to(self.device());
  }
  if (self.is_sparse()) {
    return sparse_dense_mm(self, mat2);
  }
  TORCH_CHECK(self.dim() == 2 && mat2.dim() == 2, "mm: matrices expected, got ", self.dim(), "D, ", mat2.dim(),
              "D tensors");
  return sparse_dense_mm(mat2.t(), self.t()).t();  // dense @ sparse = (sparse^T @ dense^T)^T
}

at::Tensor addmm_sparse(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  if (!mat1.is_sparse() || mat2.is_sparse() || self.is_sparse()) {
    // Other sparse operands (a sparse self or mat2) run on the CPU, as sparse @ sparse does.
    return at::addmm(self.cpu(), mat1.cpu(), mat2.cpu(), beta, alpha).to(mat2.device());
  }
  const at::Tensor product = sparse_dense_mm(mat1, mat2);
  const at::Tensor base = self.expand({mat1.size(0), mat2.size(1)});
  if (beta.toComplexDouble() == 0.0) {
    return product.mul(alpha);  // beta 0 ignores self, NaNs included
  }
  return base.mul(beta).add(product, alpha);
}

at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                      const at::Scalar& alpha, at::Tensor& out) {
  const at::Tensor result = addmm_sparse(self, mat1, mat2, beta, alpha);
  out.resize_(result.sizes());
  return out.copy_(result);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("mm", TORCH_FN(mm));
  m.impl("addmm", TORCH_FN(addmm_sparse));
  m.impl("addmm.out", TORCH_FN(addmm_out));
}

}  // namespace torchtpu
