// Autocast for the tpu device: the AutocastPrivateUse1 kernels, with CUDA's op policies.
//
// Under torch.autocast(device_type="tpu"), matmuls and convolutions run in the autocast dtype
// (bfloat16 by default), precision-sensitive ops (softmax, norms, losses, exp/log, sums) run in
// float32 (cross_entropy too, as on CPU), and ops that mix dtypes (cat, stack, addcmul...) promote
// to the widest input type.
// Every other op passes through untouched.

#include <ATen/Functions.h>
#include <ATen/Operators.h>
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace torchtpu {

// The redispatch signatures of AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE name these unqualified.
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

namespace {

// binary_cross_entropy_banned mirrors CUDA: the op is unsafe to autocast.
at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                       int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}

}  // namespace

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define TTPU_KERNEL_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define TTPU_KERNEL_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define TTPU_KERNEL_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define TTPU_KERNEL_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

  AT_FORALL_LOWER_PRECISION_FP(TTPU_KERNEL_LOWER_PRECISION_FP)
  AT_FORALL_FP32(TTPU_KERNEL_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(TTPU_KERNEL_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(TTPU_KERNEL_PROMOTE)
  KERNEL_PRIVATEUSEONE(cat, promote)
  KERNEL_PRIVATEUSEONE(stack, promote)
  KERNEL_PRIVATEUSEONE(index_copy, promote)
  // Beyond CUDA's lists, as CPU autocast and torch_xla's: cross_entropy_loss calls log_softmax with its input's
  // dtype, which CUDA's policy keeps, so a bfloat16 loss would hold bfloat16's precision in a float32 result.
  KERNEL_PRIVATEUSEONE(cross_entropy_loss, fp32)

#undef TTPU_KERNEL_LOWER_PRECISION_FP
#undef TTPU_KERNEL_FP32
#undef TTPU_KERNEL_FP32_SET_OPT_DTYPE
#undef TTPU_KERNEL_PROMOTE

  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(binary_cross_entropy_banned));
}

}  // namespace torchtpu
