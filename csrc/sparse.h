// Sparse COO tensors on tpu: a SparseTensorImpl whose indices and values are dense tpu tensors.
#pragma once

#include <ATen/core/Tensor.h>

namespace torchtpu {

// coalesce_sparse sums the values of repeated indices and sorts the indices, on the device: the
// indices are flattened, made unique (one sync for the unique count) and the values index-added.
at::Tensor coalesce_sparse(const at::Tensor& self);

}  // namespace torchtpu
