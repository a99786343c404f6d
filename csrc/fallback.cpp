#include "fallback.h"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include <ATen/native/CPUFallback.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "fork.h"
#include "generator.h"
#include "availability.h"
#include "marshal.h"
#include "torchtpu.h"

namespace torchtpu {
namespace {

struct OpInfo {
  std::string name;
  bool to_go;  // Go has a rule and every return can be built from its outputs.
  bool seeded;  // the rule takes a trailing seed from the device's default generator
  LayoutSource layout;  // how to find the strides PyTorch gives the results
  std::vector<size_t> bumped;  // the tensor lists whose versions the op bumps (in-place _foreach_ ops)
};

// bumped_lists returns the mutable tensor-list arguments of an in-place _foreach_ op. CPU's foreach
// kernels bump each tensor's version (their slow path calls one in-place op per tensor; CUDA's fast
// kernels bump them by hand): autograd's kernels for these ops do not, so a backend must.
std::vector<size_t> bumped_lists(const c10::FunctionSchema& schema) {
  const auto& name = schema.name();
  std::vector<size_t> out;
  if (name.rfind("aten::_foreach_", 0) != 0 || name.back() != '_') {
    return out;
  }
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    const auto* alias = args[i].alias_info();
    if (alias != nullptr && alias->isWrite() && args[i].real_type()->kind() == c10::TypeKind::ListType) {
      out.push_back(i);
    }
  }
  return out;
}

// VersionBump holds the tensors of an op's bumped lists, taken off the stack before the op runs,
// and bumps their versions once it has succeeded. As on CPU, a normal tensor is bumped in inference
// mode too, and an inference tensor outside it raises after the update.
class VersionBump {
 public:
  VersionBump(const std::vector<size_t>& lists, const c10::FunctionSchema& schema, const torch::jit::Stack& stack) {
    if (lists.empty()) {
      return;
    }
    const size_t first = stack.size() - schema.arguments().size();
    for (size_t i : lists) {
      for (const auto& t : stack[first + i].toTensorList()) {
        tensors_.push_back(t);
      }
    }
  }
  void done() {
    for (auto& t : tensors_) {
      if (t.defined()) {
        t.unsafeGetTensorImpl()->bump_version();
      }
    }
  }

 private:
  std::vector<at::Tensor> tensors_;
};

const OpInfo& op_info(const c10::OperatorHandle& op) {
  check_not_forked();
  static std::shared_mutex mu;
  static std::unordered_map<c10::OperatorName, OpInfo> cache;
  const auto& key = op.operator_name();
  {
    std::shared_lock<std::shared_mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) {
      return it->second;
    }
  }
  OpInfo info;
  info.name = op_full_name(key);
  const int32_t rule = ttpu_has_rule(info.name.c_str());
  info.to_go = rule != 0 && supported_by_go(op.schema());
  info.seeded = rule == 2;
  if (info.to_go) {
    info.layout = layout_source(op);
  }
  info.bumped = bumped_lists(op.schema());
  std::unique_lock<std::shared_mutex> lock(mu);
  return cache.emplace(key, std::move(info)).first->second;
}

// CpuGenerators stands in CPU generators for tpu ones on the stack (CPU kernels accept only
// those) and carries the advanced state back afterwards.
class CpuGenerators {
 public:
  CpuGenerators(const c10::FunctionSchema& schema, torch::jit::Stack* stack) {
    const size_t n = schema.arguments().size();
    for (size_t i = stack->size() - n; i < stack->size(); ++i) {
      auto& v = (*stack)[i];
      if (!v.isGenerator() || !v.toGenerator().defined() || !v.toGenerator().device().is_privateuseone()) {
        continue;
      }
      at::Generator tpu = v.toGenerator();
      auto* src = at::check_generator<TpuGeneratorImpl>(tpu);
      at::Generator cpu = at::make_generator<at::CPUGeneratorImpl>(src->current_seed());
      auto* dst = at::check_generator<at::CPUGeneratorImpl>(cpu);
      dst->set_engine(src->engine());
      dst->set_next_float_normal_sample(src->next_float_normal_sample());
      dst->set_next_double_normal_sample(src->next_double_normal_sample());
      pairs_.emplace_back(tpu, cpu);
      v = c10::IValue(cpu);
    }
  }

  ~CpuGenerators() {
    for (auto& [tpu, cpu] : pairs_) {
      auto* src = at::check_generator<at::CPUGeneratorImpl>(cpu);
      auto* dst = at::check_generator<TpuGeneratorImpl>(tpu);
      dst->set_engine(src->engine());
      dst->set_next_float_normal_sample(src->next_float_normal_sample());
      dst->set_next_double_normal_sample(src->next_double_normal_sample());
    }
  }

 private:
  std::vector<std::pair<at::Generator, at::Generator>> pairs_;
};

}  // namespace

void run_on_cpu(const c10::OperatorHandle& op, const std::string& name, torch::jit::Stack* stack, CpuRunner run) {
  TORCH_CHECK(ttpu_fallback_is_error() == 0, "torchtpu: ", name,
              " has no tpu rule, and TORCHTPU_FALLBACK=error forbids running it on the CPU");
  if (ttpu_note_fallback(name.c_str()) == 1) {
    TORCH_WARN("torchtpu: ", name,
               " has no tpu rule; it runs on the CPU (inputs copied to the host, outputs copied back). "
               "Set TORCHTPU_FALLBACK=error to make this an error.");
  }
  CpuGenerators generators(op.schema(), stack);
  if (run == nullptr) {
    at::native::cpu_fallback(op, stack);
  } else {
    run(op, stack);
  }
}

bool returns_view(const c10::FunctionSchema& schema) {
  for (const auto& r : schema.returns()) {
    if (r.alias_info() != nullptr && !r.alias_info()->isWrite()) {
      return true;
    }
  }
  return false;
}

std::string op_full_name(const c10::OperatorName& name) {
  if (name.overload_name.empty()) {
    return name.name;
  }
  return name.name + "." + name.overload_name;
}

void tpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  check_usable();
  const OpInfo& info = op_info(op);
  VersionBump bump(info.bumped, op.schema(), *stack);
  if (info.to_go && run_op(info.name, op.schema(), stack, &info.layout, info.seeded)) {
    bump.done();
    return;
  }
  run_on_cpu(op, info.name, stack);
  bump.done();
}

void register_rule_kernels() {
  static std::once_flag once;
  static std::unique_ptr<torch::Library> lib;
  std::call_once(once, [] {
    lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__,
                                           __LINE__);
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const auto& name : dispatcher.getAllOpNames()) {
      if (name.name.rfind("aten::", 0) != 0) {
        continue;
      }
      std::string full = op_full_name(name);
      // Copies cross devices; they stay with PyTorch's copy_ -> _copy_from path.
      if (name.name == "aten::copy_" || name.name == "aten::_to_copy" || ttpu_has_rule(full.c_str()) == 0) {
        continue;
      }
      auto op = dispatcher.findOp(name);
      if (!op || !op->hasSchema() || op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1) ||
          op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) || !supported_by_go(op->schema())) {
        continue;
      }
      if (returns_view(op->schema())) {
        continue;
      }
      lib->impl(full.substr(6).c_str(), torch::CppFunction::makeFromBoxedFunction<&tpu_fallback>());
    }
  });
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&tpu_fallback>()); }

}  // namespace torchtpu
