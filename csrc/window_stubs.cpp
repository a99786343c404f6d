// Window functions whose composite kernels call a DispatchStub directly with the output's device: without a
// PrivateUse1 entry, torch.kaiser_window(device="tpu") hit the stub's internal assert. The window is formed on
// the CPU (a few values, once per call) and copied into the tpu output.
#include <ATen/ATen.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/TensorIterator.h>
#include <ATen/native/UnaryOps.h>

namespace torchtpu {
namespace {

// kaiser_window_tpu fills iter's output, a window of window_length values (the composite has already added
// one for a periodic window), as CPU's kernel does.
void kaiser_window_tpu(at::TensorIteratorBase& iter, const int64_t window_length, const double beta) {
  const at::Tensor& out = iter.tensor(0);
  at::Tensor cpu = at::kaiser_window(window_length, /*periodic=*/false, beta, out.options().device(at::kCPU));
  out.copy_(cpu.view(out.sizes()));
}

}  // namespace
}  // namespace torchtpu

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(kaiser_window_stub, &torchtpu::kaiser_window_tpu)
}  // namespace at::native
