// Sparse COO tensors on tpu: a SparseTensorImpl whose indices and values are dense tpu tensors.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace torchtpu {

// coalesce_sparse sums the values of repeated indices and sorts the indices, on the device: the
// indices are flattened, made unique (one sync for the unique count) and the values index-added.
at::Tensor coalesce_sparse(const at::Tensor& self);

// sparse_rows_shape is the shape of a dense tensor of t's sizes seen as one row per sparse position:
// [prod(sizes[:sparse_dim]), sizes[sparse_dim:]...].
std::vector<int64_t> sparse_rows_shape(const at::Tensor& t);

// sparse_row_index is each stored value's row in sparse_rows_shape(t): its indices flattened
// (row-major), so a coalesced tensor's rows are sorted and unique.
at::Tensor sparse_row_index(const at::Tensor& t);

// make_sparse wraps indices and values (no copy) in a new sparse tensor of the given sizes and flag.
at::Tensor make_sparse(const at::Tensor& indices, const at::Tensor& values, c10::IntArrayRef sizes, bool coalesced);

// set_sparse makes out (sparse) hold indices and values (no copy) with the given sizes and flag.
void set_sparse(const at::Tensor& out, c10::IntArrayRef sizes, const at::Tensor& indices, const at::Tensor& values,
                bool coalesced);

}  // namespace torchtpu
