// Explicit kernels PyTorch requires of a device: factories, views, resize/set_, copies, .item().
#pragma once

#include <ATen/core/Tensor.h>

namespace torchtpu {

// to_host reads a tpu tensor (any view) into a new contiguous CPU tensor of its dtype and sizes.
at::Tensor to_host(const at::Tensor& src);

// to_host_into reads a tpu tensor straight into dst's memory and returns true when dst is a contiguous CPU
// tensor of src's dtype and sizes with no conjugate or negative bit; otherwise it does nothing and returns false.
bool to_host_into(const at::Tensor& src, const at::Tensor& dst);

// from_host writes a CPU tensor, converted to dst's dtype and broadcast to its sizes, into the tpu view dst.
void from_host(const at::Tensor& dst, const at::Tensor& src);

}  // namespace torchtpu
