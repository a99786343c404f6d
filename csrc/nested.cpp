// Nested tensors (the strided layout torch.nested and the Transformer fast path build) whose buffer lives on a
// tpu. PyTorch's fast path for nn.TransformerEncoder in eval mode turns a padded batch with a key-padding mask
// into a nested tensor on any PrivateUse1 device, so the NestedTensorPrivateUse1 key needs kernels.
//
// The nested kernels CPU and CUDA share are device-generic (they reshape the buffer and call ATen ops on it);
// they are registered here as they are. Every other op on a nested tpu tensor runs on the CPU: the boxed
// fallback copies nested and dense arguments to the host, runs the CPU nested kernel, and copies results back
// (arguments the op writes are written back). A view must share the tpu buffer, so the view kernels are among the
// generic ones registered here and other views are refused.
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include <ATen/ATen.h>
#include <ATen/NestedTensorImpl.h>
#include <ATen/ops/_nested_tensor_size_native.h>
#include <ATen/ops/_nested_tensor_storage_offsets_native.h>
#include <ATen/ops/_nested_tensor_strides_native.h>
#include <ATen/ops/_nested_view_from_buffer_native.h>
#include <ATen/ops/_to_copy_native.h>
#include <ATen/ops/alias_native.h>
#include <ATen/ops/chunk_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/detach_native.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/fill_native.h>
#include <ATen/ops/narrow_native.h>
#include <ATen/ops/select_native.h>
#include <ATen/ops/split_with_sizes_native.h>
#include <ATen/ops/squeeze_native.h>
#include <ATen/ops/to_padded_tensor_native.h>
#include <ATen/ops/transpose_native.h>
#include <ATen/ops/unbind_native.h>
#include <ATen/ops/unsqueeze_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/zero_native.h>
#include <torch/library.h>

#include "fallback.h"
#include "nested.h"

namespace torchtpu {
namespace {

// storage_of is the whole storage of a nested tensor, as a 1-D tensor.
at::Tensor storage_of(const at::Tensor& t) { return at::native::get_nested_tensor_impl(t)->get_unsafe_storage_as_tensor(); }

// move copies t to device. A nested tensor moves with its whole storage and keeps its sizes, strides and offsets,
// so views that are not contiguous move too (to() takes only contiguous ones).
at::Tensor move(const at::Tensor& t, c10::Device device) {
  if (!t.is_nested()) {
    return t.to(device);
  }
  const auto* impl = at::native::get_nested_tensor_impl(t);
  return at::detail::make_tensor<at::native::NestedTensorImpl>(storage_of(t).to(device), impl->get_nested_sizes(),
                                                               impl->get_nested_strides(),
                                                               impl->get_storage_offsets());
}

// HostRun moves an op's tpu arguments to the CPU and its CPU results back to the tpu.
class HostRun {
 public:
  at::Tensor to_host(const at::Tensor& t, bool written) {
    if (!t.defined() || !t.device().is_privateuseone()) {
      return t;
    }
    if (!device_) {
      device_ = t.device();
    }
    at::Tensor host = move(t, at::kCPU);
    if (written) {
      written_.emplace_back(t, host);
    }
    return host;
  }

  // to_device returns the tpu tensor a result stands for: the argument it was written into, or a copy.
  at::Tensor to_device(const at::Tensor& t) const {
    if (!t.defined() || !t.device().is_cpu() || !device_) {
      return t;
    }
    for (const auto& [dev, host] : written_) {
      if (host.unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) {
        return dev;
      }
    }
    return move(t, *device_);
  }

  // write_back copies the arguments the op wrote into their tpu tensors.
  void write_back() {
    for (auto& [dev, host] : written_) {
      if (dev.is_nested()) {
        storage_of(dev).copy_(storage_of(host));
      } else {
        dev.copy_(host);
      }
    }
  }

 private:
  std::optional<c10::Device> device_;
  std::vector<std::pair<at::Tensor, at::Tensor>> written_;
};

c10::IValue map_tensors(const c10::IValue& v, const std::function<at::Tensor(const at::Tensor&)>& f) {
  if (v.isTensor()) {
    return f(v.toTensor());
  }
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorList()) {
      out.push_back(f(t));
    }
    return out;
  }
  if (v.isOptionalTensorList()) {
    c10::List<std::optional<at::Tensor>> out;
    for (const std::optional<at::Tensor>& t : v.toOptionalTensorList()) {
      out.push_back(t.has_value() ? std::optional<at::Tensor>(f(*t)) : std::nullopt);
    }
    return out;
  }
  return v;
}

// run_nested_on_host runs op's CPU kernel (NestedTensorCPU for nested arguments, CPU for dense ones).
void run_nested_on_host(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t begin = stack->size() - args.size();
  HostRun run;
  for (size_t i = 0; i < args.size(); ++i) {
    const bool written = args[i].alias_info() != nullptr && args[i].alias_info()->isWrite();
    auto& v = (*stack)[begin + i];
    v = map_tensors(v, [&](const at::Tensor& t) { return run.to_host(t, written); });
  }
  op.callBoxed(stack);
  run.write_back();
  const size_t returns = op.schema().returns().size();
  for (size_t i = stack->size() - returns; i < stack->size(); ++i) {
    (*stack)[i] = map_tensors((*stack)[i], [&](const at::Tensor& t) { return run.to_device(t); });
  }
}

void nested_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = op_full_name(op.operator_name());
  // A copy made on the CPU would not share the tpu buffer: refuse rather than break aliasing.
  TORCH_CHECK_NOT_IMPLEMENTED(!returns_view(op.schema()), name, " returns a view, which nested tensors on tpu do not support");
  run_on_cpu(op, name + " (nested)", stack, &run_nested_on_host);
}

}  // namespace

void register_nested_kernels() {
  static std::once_flag once;
  static std::unique_ptr<torch::Library> lib;
  std::call_once(once, [] {
    lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::NestedTensorPrivateUse1,
                                           __FILE__, __LINE__);
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const auto& name : dispatcher.getAllOpNames()) {
      auto op = dispatcher.findOp(name);
      if (name.name.rfind("aten::", 0) != 0 || !op || !op->hasSchema() ||
          !op->hasKernelForDispatchKey(c10::DispatchKey::NestedTensorCPU) ||
          op->hasKernelForDispatchKey(c10::DispatchKey::NestedTensorPrivateUse1)) {
        continue;
      }
      if (!returns_view(op->schema())) {
        lib->impl(op_full_name(name).substr(6).c_str(), torch::CppFunction::makeFromBoxedFunction<&nested_fallback>());
      }
    }
  });
}

}  // namespace torchtpu

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  // Copies and fills.
  m.impl("_to_copy", TORCH_FN(at::native::_to_copy_nested));
  m.impl("copy_", TORCH_FN(at::native::copy_nested_));
  m.impl("clone", TORCH_FN(at::native::clone_nested));
  m.impl("empty_like", TORCH_FN(at::native::empty_like_nested));
  m.impl("fill_.Scalar", static_cast<at::Tensor& (*)(at::Tensor&, const at::Scalar&)>(&at::native::fill_nested_));
  m.impl("fill_.Tensor", static_cast<at::Tensor& (*)(at::Tensor&, const at::Tensor&)>(&at::native::fill_nested_));
  m.impl("zero_", TORCH_FN(at::native::zero_nested_));
  m.impl("to_padded_tensor", TORCH_FN(at::native::NestedTensor_to_padded_tensor_generic));
  // Views of the buffer.
  m.impl("alias", TORCH_FN(at::native::alias_nested));
  m.impl("detach", TORCH_FN(at::native::detach));
  m.impl("values", TORCH_FN(at::native::values_nested));
  m.impl("unbind.int", TORCH_FN(at::native::NestedTensor_unbind));
  m.impl("select.int", TORCH_FN(at::native::select_nested));
  m.impl("narrow", TORCH_FN(at::native::narrow_nested_symint));
  m.impl("chunk", TORCH_FN(at::native::chunk_nested_tensor));
  m.impl("split_with_sizes", TORCH_FN(at::native::split_with_sizes_nested));
  m.impl("transpose.int", TORCH_FN(at::native::transpose_nested));
  m.impl("squeeze", TORCH_FN(at::native::squeeze_nested));
  m.impl("squeeze.dim", static_cast<at::Tensor (*)(const at::Tensor&, int64_t)>(&at::native::squeeze_dim_nested));
  m.impl("squeeze.dims", static_cast<at::Tensor (*)(const at::Tensor&, at::IntArrayRef)>(&at::native::squeeze_dim_nested));
  m.impl("unsqueeze", TORCH_FN(at::native::unsqueeze_nested));
  m.impl("view", TORCH_FN(at::native::view_nested));
  // Metadata, kept on the host as on CUDA.
  m.impl("_nested_tensor_size", TORCH_FN(at::native::_nested_tensor_size));
  m.impl("_nested_tensor_strides", TORCH_FN(at::native::_nested_tensor_strides));
  m.impl("_nested_tensor_storage_offsets", TORCH_FN(at::native::_nested_tensor_storage_offsets));
}

// A nested view of a dense tpu buffer.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_nested_view_from_buffer", TORCH_FN(at::native::_nested_view_from_buffer));
}

TORCH_LIBRARY_IMPL(_, NestedTensorPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&torchtpu::nested_fallback>());
}
