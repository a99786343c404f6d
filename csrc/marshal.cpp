#include "marshal.h"

#include <ATen/native/Resize.h>
#include <c10/util/Exception.h>

#include "allocator.h"
#include "device_guard.h"
#include "generator.h"
#include "go_call.h"

namespace torchtpu {
namespace {

c10::TypePtr unwrap_optional(const c10::TypePtr& t) {
  if (auto o = t->cast<c10::OptionalType>()) {
    return o->getElementType();
  }
  return t;
}

int64_t int_of(const c10::IValue& v) {
  if (v.isSymInt()) {
    return v.toSymInt().guard_int(__FILE__, __LINE__);
  }
  if (v.isBool()) {
    return v.toBool() ? 1 : 0;
  }
  return v.toInt();
}

double double_of(const c10::IValue& v) {
  if (v.isSymFloat()) {
    return v.toSymFloat().guard_float(__FILE__, __LINE__);
  }
  if (v.isInt()) {
    return static_cast<double>(v.toInt());
  }
  return v.toDouble();
}

bool is_tensor_type(const c10::TypePtr& t) { return unwrap_optional(t)->kind() == c10::TypeKind::TensorType; }

bool is_tensor_list_type(const c10::TypePtr& t) {
  auto l = unwrap_optional(t)->cast<c10::ListType>();
  return l && is_tensor_type(l->getElementType());
}

// written_argument is the index of the argument a return aliases and writes, or -1.
int written_argument(const c10::FunctionSchema& schema, const c10::Argument& ret) {
  const auto* ra = ret.alias_info();
  if (ra == nullptr || !ra->isWrite()) {
    return -1;
  }
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    const auto* aa = args[i].alias_info();
    if (aa != nullptr && aa->isWrite() && aa->beforeSets() == ra->beforeSets()) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace

bool supported_by_go(const c10::FunctionSchema& schema) {
  for (const auto& r : schema.returns()) {
    if (!is_tensor_type(r.type()) && !is_tensor_list_type(r.type())) {
      return false;
    }
  }
  return true;
}

namespace {

int64_t draw_seed(const std::optional<at::Generator>& gen, c10::DeviceIndex device, Seeds* seeds) {
  if (seeds == nullptr) {
    return seed_for_op(gen, device);
  }
  if (seeds->next == seeds->drawn.size()) {
    seeds->drawn.push_back(seed_for_op(gen, device));
  }
  return seeds->drawn[seeds->next++];
}

}  // namespace

void marshal_arguments(const c10::FunctionSchema& schema, const torch::jit::Stack& stack, ArgList& args,
                       bool seeded, Seeds* seeds) {
  const auto& formals = schema.arguments();
  const size_t n = formals.size();
  TORCH_INTERNAL_ASSERT(stack.size() >= n);
  const size_t first = stack.size() - n;
  // Tensors first so that a Generator or Device argument knows the op's device.
  std::vector<bool> done(n, false);
  for (size_t i = 0; i < n; ++i) {
    const auto& v = stack[first + i];
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().device().is_privateuseone()) {
      args.note_device(v.toTensor().device().index());
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const c10::IValue& v = stack[first + i];
    auto type = unwrap_optional(formals[i].type());
    if (type->kind() == c10::TypeKind::GeneratorType) {
      // Random ops get a 64-bit seed drawn from the generator, the device's default one when None,
      // so torch.manual_seed reaches Go.
      std::optional<at::Generator> gen;
      if (!v.isNone()) {
        gen = v.toGenerator();
      }
      args.add_int(draw_seed(gen, args.device(), seeds));
      continue;
    }
    if (v.isNone()) {
      args.add_none();
      continue;
    }
    switch (type->kind()) {
      case c10::TypeKind::TensorType:
        args.add_tensor(v.toTensor());
        break;
      case c10::TypeKind::IntType:
      case c10::TypeKind::SymIntType:
        args.add_int(int_of(v));
        break;
      case c10::TypeKind::FloatType:
      case c10::TypeKind::SymFloatType:
        args.add_double(double_of(v));
        break;
      case c10::TypeKind::BoolType:
      case c10::TypeKind::SymBoolType:
        args.add_bool(v.isSymBool() ? v.toSymBool().guard_bool(__FILE__, __LINE__) : v.toBool());
        break;
      case c10::TypeKind::NumberType:
        args.add_scalar(v.toScalar());
        break;
      case c10::TypeKind::StringType:
        args.add_string(v.toStringRef());
        break;
      case c10::TypeKind::ScalarTypeType:
      case c10::TypeKind::LayoutType:
      case c10::TypeKind::MemoryFormatType:
        args.add_int(v.toInt());
        break;
      case c10::TypeKind::DeviceObjType: {
        auto d = v.toDevice();
        args.add_int(d.is_privateuseone() ? resolve_index(d.index()) : d.index());
        break;
      }
      case c10::TypeKind::ListType: {
        auto raw_elem = type->castRaw<c10::ListType>()->getElementType();
        auto elem = unwrap_optional(raw_elem);
        const auto& list = v.toListRef();
        switch (elem->kind()) {
          case c10::TypeKind::TensorType: {
            // Tensor?[] holds indices; as on CUDA, CPU index tensors are moved to the device.
            const bool indices = raw_elem->kind() == c10::TypeKind::OptionalType;
            std::vector<std::optional<at::Tensor>> ts;
            ts.reserve(list.size());
            for (const auto& e : list) {
              if (e.isNone()) {
                ts.push_back(std::nullopt);
                continue;
              }
              at::Tensor t = e.toTensor();
              if (indices && t.defined() && t.device().is_cpu() && t.dim() > 0) {
                t = t.to(c10::Device(c10::DeviceType::PrivateUse1, args.device()));
                args.keep(t);
              }
              ts.push_back(t);
            }
            args.add_tensor_list(ts);
            break;
          }
          case c10::TypeKind::IntType:
          case c10::TypeKind::SymIntType: {
            std::vector<int64_t> xs;
            for (const auto& e : list) xs.push_back(int_of(e));
            args.add_int_list(std::move(xs));
            break;
          }
          case c10::TypeKind::FloatType:
          case c10::TypeKind::NumberType: {
            // Scalar[] (the _foreach_ ops' scalar lists) travels as doubles.
            std::vector<double> xs;
            for (const auto& e : list) xs.push_back(e.isBool() ? (e.toBool() ? 1.0 : 0.0) : double_of(e));
            args.add_double_list(std::move(xs));
            break;
          }
          case c10::TypeKind::BoolType: {
            std::vector<bool> xs;
            for (const auto& e : list) xs.push_back(e.toBool());
            args.add_bool_list(xs);
            break;
          }
          default:
            TORCH_CHECK(false, "torchtpu: unsupported argument type ", type->str(), " of ", formals[i].name(), " in ",
                        args.op());
        }
        break;
      }
      default:
        TORCH_CHECK(false, "torchtpu: unsupported argument type ", type->str(), " of ", formals[i].name(), " in ",
                    args.op());
    }
  }
  if (seeded) {
    args.add_int(draw_seed(std::nullopt, args.device(), seeds));
  }
}

// resize_out resizes out= argument t to o's sizes in the way o's dtype field names (TTPU_RESIZE_*). A t
// resized with a warning takes the strides its op's functional twin gives its result (strides), as CPU's
// TensorIterator kernels restride the out= tensors they resize.
static void resize_out(const at::Tensor& t, const ttpu_out& o, const std::vector<int64_t>& strides) {
  c10::IntArrayRef sizes(o.sizes, o.ndim);
  if (o.dtype == TTPU_RESIZE_QUIET) {
    t.resize_(sizes);
    return;
  }
  const bool resized = at::native::resize_output(t, sizes);
  if (resized && o.dtype == TTPU_RESIZE_WARN && strides.size() == sizes.size()) {
    t.as_strided_(sizes, strides);
    return;
  }
  if (resized && o.dtype == TTPU_RESIZE_COLUMN_MAJOR && o.ndim >= 2) {
    // Batches of column-major matrices, as LAPACK writes them.
    std::vector<int64_t> strides(o.ndim);
    const int64_t m = o.sizes[o.ndim - 2], n = o.sizes[o.ndim - 1];
    strides[o.ndim - 2] = 1;
    strides[o.ndim - 1] = std::max<int64_t>(m, 1);
    int64_t step = std::max<int64_t>(m * n, 1);
    for (int i = o.ndim - 3; i >= 0; --i) {
      strides[i] = step;
      step *= std::max<int64_t>(o.sizes[i], 1);
    }
    t.as_strided_(sizes, strides);
  }
}

bool run_op(const std::string& name, const c10::FunctionSchema& schema, torch::jit::Stack* stack,
            const LayoutSource* layout, bool seeded) {
  const size_t nargs = schema.arguments().size();
  std::shared_ptr<const ResultLayouts> layouts;
  if (layout != nullptr) {
    layouts = result_layouts(*layout, *stack);
  }
  std::vector<ttpu_out> outs;
  c10::DeviceIndex device = 0;
  {
    const size_t first = stack->size() - nargs;
    for (size_t i = 0; i < nargs; ++i) {
      const auto* ai = schema.arguments()[i].alias_info();
      const c10::IValue& v = (*stack)[first + i];
      if (ai == nullptr || !ai->isWrite()) {
        continue;
      }
      if (v.isTensor()) {
        materialize_cow(v.toTensor());
      } else if (v.isTensorList()) {
        for (const at::Tensor& t : v.toTensorList()) {
          materialize_cow(t);
        }
      }
    }
  }
  Seeds seeds;
  for (int attempt = 0;; ++attempt) {
    ArgList args(name);
    seeds.next = 0;
    marshal_arguments(schema, *stack, args, seeded, &seeds);
    device = args.device();
    ttpu_status st = call_go(args, outs, layouts ? &layouts->orders : nullptr);
    if (st == TTPU_NO_RULE) {
      return false;
    }
    if (st == TTPU_OK) {
      break;
    }
    TORCH_CHECK(st == TTPU_NEEDS_RESIZE && attempt == 0, "torchtpu: ", name, " returned unexpected status ", st);
    // Resize the trailing mutated tensor arguments (the out= ones; batch norm's running stats come
    // before them), in argument order, to the sizes Go asks for, as each asks.
    const size_t first = stack->size() - nargs;
    std::vector<size_t> mutated;
    for (size_t i = 0; i < nargs; ++i) {
      const auto* ai = schema.arguments()[i].alias_info();
      if (ai != nullptr && ai->isWrite() && (*stack)[first + i].isTensor()) {
        mutated.push_back(i);
      }
    }
    TORCH_CHECK(outs.size() <= mutated.size(), "torchtpu: ", name, " asked to resize ", outs.size(),
                " arguments but has ", mutated.size(), " mutated ones");
    const size_t skip = mutated.size() - outs.size();
    const auto twin = layout != nullptr ? out_layouts(*layout, *stack) : nullptr;
    for (size_t k = 0; k < outs.size(); ++k) {
      const std::vector<int64_t> strides =
          twin ? strides_in(*twin, k, c10::IntArrayRef(outs[k].sizes, outs[k].ndim)) : std::vector<int64_t>{};
      resize_out((*stack)[first + mutated[skip + k]].toTensor(), outs[k], strides);
    }
  }

  // Build the results: written arguments by alias, everything else from outs in order.
  const auto& returns = schema.returns();
  size_t singles = 0;
  for (const auto& r : returns) {
    if (written_argument(schema, r) < 0 && is_tensor_type(r.type())) {
      ++singles;
    }
  }
  std::vector<c10::IValue> results;
  results.reserve(returns.size());
  const size_t first = stack->size() - nargs;
  size_t next = 0;
  auto wrap = [&]() {
    const size_t k = next++;
    at::Tensor t = wrap_out(outs[k], device);
    if (layouts) {
      apply_layout(t, outs[k], *layouts, name, k);
    }
    return t;
  };
  for (const auto& r : returns) {
    int w = written_argument(schema, r);
    if (w >= 0) {
      results.push_back((*stack)[first + w]);
    } else if (is_tensor_type(r.type())) {
      TORCH_CHECK(next < outs.size(), "torchtpu: ", name, " returned too few outputs (", outs.size(), ")");
      results.emplace_back(wrap());
    } else {
      TORCH_CHECK(outs.size() >= singles, "torchtpu: ", name, " returned too few outputs (", outs.size(), ")");
      size_t count = outs.size() - singles;
      std::vector<at::Tensor> list;
      list.reserve(count);
      for (size_t j = 0; j < count; ++j) {
        list.push_back(wrap());
      }
      results.emplace_back(c10::IValue(list));
    }
  }
  torch::jit::drop(*stack, nargs);
  for (auto& r : results) {
    torch::jit::push(*stack, std::move(r));
  }
  return true;
}

}  // namespace torchtpu
