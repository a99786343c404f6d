// Warnings CPU's kernels give before they compute, given here before the rule runs: Go rules return values or
// errors, not warnings. random_'s precision bounds, searchsorted's contiguity hints, arange's resize of an out= of
// another count, and var/std without degrees of freedom.
#include <ATen/native/RangeUtils.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/library.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "fallback.h"

namespace torchtpu {
namespace {

// random_bounds_warn warns, as CPU's check_from_to_in_range does, when random_(from, to) on a floating tensor
// reaches integers past those its type holds exactly (2^digits); the rule then checks the hard bounds and draws.
void random_bounds_warn(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t begin = stack->size() - args.size();
  const at::Tensor self = (*stack)[begin].toTensor();
  int digits = 0;
  double max = 0;
  switch (self.scalar_type()) {
    case c10::ScalarType::Float:
      digits = std::numeric_limits<float>::digits, max = std::numeric_limits<float>::max();
      break;
    case c10::ScalarType::Double:
      digits = std::numeric_limits<double>::digits, max = std::numeric_limits<double>::max();
      break;
    case c10::ScalarType::Half:
      digits = std::numeric_limits<at::Half>::digits, max = std::numeric_limits<at::Half>::max();
      break;
    case c10::ScalarType::BFloat16:
      digits = std::numeric_limits<at::BFloat16>::digits, max = std::numeric_limits<at::BFloat16>::max();
      break;
    default:
      break;
  }
  int64_t from = 0;
  std::optional<int64_t> to;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& v = (*stack)[begin + i];
    if (args[i].name() == "from") {
      from = v.toInt();
    } else if (args[i].name() == "to" && !v.isNone()) {
      to = v.toInt();
    }
  }
  const int64_t limit = int64_t(1) << digits;
  const int64_t to_inc = to ? *to - 1 : limit;
  auto fits = [&](int64_t v) { return static_cast<double>(v) >= -max && static_cast<double>(v) <= max; };
  if (digits > 0 && (!to || *to > from) && fits(from) && fits(to_inc)) {
    for (const auto& [v, name] : {std::pair{from, "from"}, std::pair{to_inc, "to - 1"}}) {
      if (v < -limit || v > limit) {
        TORCH_WARN(name, " is out of bounds [-(2^", digits, "), 2^", digits, "]. ", "Due to precision limitations ",
                   self.dtype(), " can support discrete uniform distribution only within this range. ",
                   "This warning will become an error in version 1.7 release, please fix the code in advance");
      }
    }
  }
  tpu_fallback(op, stack);
}

// search_contiguity_warn gives searchsorted's and bucketize's hints about non-contiguous arguments, once each per
// process as CPU's kernels do, then runs the rule.
void search_contiguity_warn(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t begin = stack->size() - args.size();
  auto non_contiguous = [&](const char* name) {
    for (size_t i = 0; i < args.size(); ++i) {
      const auto& v = (*stack)[begin + i];
      if (args[i].name() == name && v.isTensor() && v.toTensor().defined()) {
        return !v.toTensor().is_contiguous();
      }
    }
    return false;
  };
  if (non_contiguous("self")) {
    TORCH_WARN_ONCE("torch.searchsorted(): input value tensor is non-contiguous, this will lower the performance due ",
                    "to extra data copy when converting non-contiguous tensor to contiguous, please use contiguous ",
                    "input value tensor if possible. This message will only appear once per program.");
  }
  if (non_contiguous("sorted_sequence") || non_contiguous("boundaries")) {
    TORCH_WARN_ONCE("torch.searchsorted(): boundary tensor is non-contiguous, this will lower the performance due ",
                    "to extra data copy when converting non-contiguous tensor to contiguous, please use contiguous ",
                    "boundary tensor if possible. This message will only appear once per program.");
  }
  if (non_contiguous("sorter")) {
    TORCH_WARN_ONCE("torch.searchsorted(): sorter tensor is non-contiguous, this will lower the performance due ",
                    "to extra data copy when converting non-contiguous tensor to contiguous, please use contiguous ",
                    "sorter tensor if possible. This message will only appear once per program.");
  }
  tpu_fallback(op, stack);
}

// arange_resize_warn warns, as CPU's arange_out does, when an out= tensor holding elements has another count than
// the range, which happens through rounding (arange(-1, 1, 2/49) has 50); the rule then resizes it and fills it.
void arange_resize_warn(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t n = stack->size();
  const at::Tensor out = (*stack)[n - 1].toTensor();
  const at::Scalar start = (*stack)[n - 4].toScalar(), end = (*stack)[n - 3].toScalar(), step = (*stack)[n - 2].toScalar();
  if (out.numel() > 0 && !start.isComplex() && !end.isComplex() && !step.isComplex()) {
    const int64_t size = out.scalar_type() == c10::ScalarType::Long
                             ? at::native::compute_arange_size<int64_t>(start, end, step)
                             : at::native::compute_arange_size<double>(start, end, step);
    if (out.numel() != size) {
      TORCH_WARN("The number of elements in the out tensor of shape ", out.sizes(), " is ", out.numel(),
                 " which does not match the computed number of elements ", size,
                 ". Note that this may occur as a result of rounding error. "
                 "The out tensor will be resized to a tensor of shape (", size, ",).");
    }
  }
  tpu_fallback(op, stack);
}

// dof_warn warns, as CPU's var and std kernels do, when a correction leaves no degrees of freedom: the elements
// reduced into each result (input numel over output numel) are not more than the correction.
void dof_warn(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t begin = stack->size() - args.size();
  const at::Tensor self = (*stack)[begin].toTensor();
  std::optional<std::vector<int64_t>> dims;
  double correction = 1;
  for (size_t i = 1; i < args.size(); ++i) {
    const auto& v = (*stack)[begin + i];
    if (args[i].name() == "dim" && !v.isNone()) {
      dims = v.toIntVector();
    } else if (args[i].name() == "correction" && !v.isNone()) {
      correction = v.toScalar().toDouble();
    }
  }
  int64_t out_numel = 1;
  if (dims && !dims->empty()) {
    std::vector<bool> reduced(self.dim(), false);
    for (int64_t d : *dims) {
      reduced[c10::maybe_wrap_dim(d, self.dim())] = true;
    }
    for (int64_t d = 0; d < self.dim(); ++d) {
      out_numel *= reduced[d] ? 1 : self.size(d);
    }
  }
  if (static_cast<double>(self.numel() / std::max<int64_t>(out_numel, 1)) - correction <= 0) {
    TORCH_WARN(op.schema().name().substr(6), "(): degrees of freedom is <= 0. Correction should be strictly less ",
               "than the reduction factor (input numel divided by output numel).");
  }
  tpu_fallback(op, stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("arange.start_out", torch::CppFunction::makeFromBoxedFunction<&arange_resize_warn>());
  for (const char* name : {"var.correction", "std.correction", "var_mean.correction", "std_mean.correction",
                           "var.correction_out", "std.correction_out", "var_mean.correction_out",
                           "std_mean.correction_out"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&dof_warn>());
  }
  for (const char* name : {"searchsorted.Tensor", "searchsorted.Scalar", "searchsorted.Tensor_out",
                           "searchsorted.Scalar_out", "bucketize.Tensor", "bucketize.Tensor_out"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&search_contiguity_warn>());
  }
  m.impl("random_.from", torch::CppFunction::makeFromBoxedFunction<&random_bounds_warn>());
  m.impl("random_.to", torch::CppFunction::makeFromBoxedFunction<&random_bounds_warn>());
}

}  // namespace torchtpu
