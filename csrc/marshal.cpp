#include "marshal.h"

#include <cstring>
#include <sstream>

#include <ATen/native/Resize.h>
#include <c10/util/Exception.h>

#include "allocator.h"
#include "device_guard.h"
#include "errors.h"
#include "fork.h"
#include "usable.h"
#include "generator.h"

namespace torchtpu {
namespace {

constexpr int32_t kMaxOuts = 1024;

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

ttpu_tensor describe(const at::Tensor& t) {
  ttpu_tensor d;
  std::memset(&d, 0, sizeof(d));
  d.device = TTPU_DEV_TPU;
  if (!t.defined()) {
    return d;
  }
  TORCH_CHECK(t.dim() <= TTPU_MAX_DIMS, "torchtpu: tensors of more than ", TTPU_MAX_DIMS,
              " dimensions are not supported (got ", t.dim(), ")");
  const auto& storage = t.storage();
  d.data = address_of(storage.data());
  d.storage_nbytes = static_cast<int64_t>(storage.nbytes());
  d.offset = t.storage_offset();
  d.dtype = static_cast<int32_t>(t.scalar_type());
  d.ndim = static_cast<int32_t>(t.dim());
  for (int64_t i = 0; i < t.dim(); ++i) {
    d.sizes[i] = t.size(i);
    d.strides[i] = t.stride(i);
  }
  return d;
}

ttpu_arg& ArgList::push(int32_t kind) {
  ttpu_arg a;
  std::memset(&a, 0, sizeof(a));
  a.kind = kind;
  args_.push_back(a);
  return args_.back();
}

ttpu_tensor ArgList::tensor_desc(const at::Tensor& t) {
  if (!t.defined()) {
    return describe(t);
  }
  if (t.device().is_privateuseone()) {
    auto idx = t.device().index();
    if (!device_.has_value()) {
      device_ = idx;
    } else {
      TORCH_CHECK(*device_ == idx,
                  "Expected all tensors to be on the same device, but found at least two devices, tpu:",
                  static_cast<int>(*device_), " and tpu:", static_cast<int>(idx), "! (in ", op_, ")");
    }
    if (t.is_conj() || t.is_neg()) {
      // Ops that PyTorch lets through with a conjugate or negative bit set (dot, mm, ...) see the values.
      // (resolve_conj would recurse: it clones, and clone comes here.)
      at::Tensor resolved = at::alias(t);
      resolved._set_conj(false);
      resolved._set_neg(false);
      if (t.is_conj()) {
        resolved = at::_conj_physical(resolved);
      }
      if (t.is_neg()) {
        resolved = at::neg(resolved);
      }
      keep(resolved);
      return describe(resolved);
    }
    return describe(t);
  }
  TORCH_CHECK(t.device().is_cpu() && t.dim() == 0,
              "Expected all tensors to be on the same device, but found at least two devices, tpu:",
              static_cast<int>(device()), " and ", t.device().str(), "! (in ", op_, ")");
  // A CPU scalar (e.g. a wrapped Python number) travels by value.
  at::Tensor host = t.resolve_conj().resolve_neg().contiguous();
  keep(host);
  ttpu_tensor d;
  std::memset(&d, 0, sizeof(d));
  d.device = t.unsafeGetTensorImpl()->is_wrapped_number() ? TTPU_DEV_CPU_NUMBER : TTPU_DEV_CPU;
  d.dtype = static_cast<int32_t>(host.scalar_type());
  d.storage_nbytes = static_cast<int64_t>(host.nbytes());
  d.host = host.data_ptr();
  return d;
}

void ArgList::add_none() { push(TTPU_ARG_NONE); }

void ArgList::add_tensor(const at::Tensor& t) {
  if (!t.defined()) {
    add_none();
    return;
  }
  tensors_.emplace_back(1, tensor_desc(t));
  auto& a = push(TTPU_ARG_TENSOR);
  a.n = 1;
  a.tensors = tensors_.back().data();
}

void ArgList::add_tensor_list(const std::vector<std::optional<at::Tensor>>& ts) {
  std::vector<ttpu_tensor> descs;
  descs.reserve(ts.size());
  for (const auto& t : ts) {
    descs.push_back(t.has_value() ? tensor_desc(*t) : describe(at::Tensor()));
  }
  tensors_.push_back(std::move(descs));
  auto& a = push(TTPU_ARG_TENSORLIST);
  a.n = static_cast<int64_t>(ts.size());
  a.tensors = tensors_.back().data();
}

void ArgList::add_int(int64_t v) { push(TTPU_ARG_INT).i = v; }

void ArgList::add_double(double v) { push(TTPU_ARG_DOUBLE).d = v; }

void ArgList::add_bool(bool v) { push(TTPU_ARG_BOOL).i = v ? 1 : 0; }

void ArgList::add_scalar(const c10::Scalar& s) {
  if (s.isBoolean()) {
    push(TTPU_ARG_SCALAR_BOOL).i = s.toBool() ? 1 : 0;
  } else if (s.isIntegral(false)) {
    push(TTPU_ARG_SCALAR_INT).i = s.toLong();
  } else if (s.isFloatingPoint()) {
    push(TTPU_ARG_SCALAR_DOUBLE).d = s.toDouble();
  } else {
    auto z = s.toComplexDouble();
    doubles_.push_back({z.real(), z.imag()});
    auto& a = push(TTPU_ARG_SCALAR_COMPLEX);
    a.n = 2;
    a.doubles = doubles_.back().data();
  }
}

void ArgList::add_int_list(std::vector<int64_t> v) {
  ints_.push_back(std::move(v));
  auto& a = push(TTPU_ARG_INTLIST);
  a.n = static_cast<int64_t>(ints_.back().size());
  a.ints = ints_.back().data();
}

void ArgList::add_double_list(std::vector<double> v) {
  doubles_.push_back(std::move(v));
  auto& a = push(TTPU_ARG_DOUBLELIST);
  a.n = static_cast<int64_t>(doubles_.back().size());
  a.doubles = doubles_.back().data();
}

void ArgList::add_bool_list(const std::vector<bool>& v) {
  ints_.emplace_back(v.begin(), v.end());
  auto& a = push(TTPU_ARG_BOOLLIST);
  a.n = static_cast<int64_t>(ints_.back().size());
  a.ints = ints_.back().data();
}

void ArgList::add_string(std::string s) {
  strings_.push_back(std::move(s));
  push(TTPU_ARG_STRING).str = strings_.back().c_str();
}

c10::DeviceIndex ArgList::device() const {
  if (device_.has_value()) {
    return *device_;
  }
  if (named_device_.has_value()) {
    return *named_device_;
  }
  return current_device();
}

void ArgList::note_device(c10::DeviceIndex index) {
  if (!named_device_.has_value()) {
    named_device_ = resolve_index(index);
  }
}

namespace {

std::string dtype_name(int32_t code) {
  switch (static_cast<c10::ScalarType>(code)) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::Double: return "float64";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Short: return "int16";
    case c10::ScalarType::Char: return "int8";
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Bool: return "bool";
    default: return c10::toString(static_cast<c10::ScalarType>(code));
  }
}

void describe_tensor(std::ostringstream& os, const ttpu_tensor& t) {
  if (t.device == TTPU_DEV_CPU) {
    os << dtype_name(t.dtype) << " cpu scalar";
    return;
  }
  if (t.data == 0) {
    os << "None";
    return;
  }
  os << dtype_name(t.dtype) << "[";
  for (int i = 0; i < t.ndim; ++i) {
    os << (i ? ", " : "") << t.sizes[i];
  }
  os << "]";
}

}  // namespace

std::string ArgList::summary() const {
  std::ostringstream os;
  for (size_t k = 0; k < args_.size(); ++k) {
    const auto& a = args_[k];
    os << (k ? ", " : "");
    switch (a.kind) {
      case TTPU_ARG_NONE: os << "None"; break;
      case TTPU_ARG_TENSOR: describe_tensor(os, a.tensors[0]); break;
      case TTPU_ARG_TENSORLIST:
        os << "[";
        for (int64_t j = 0; j < a.n; ++j) {
          os << (j ? ", " : "");
          describe_tensor(os, a.tensors[j]);
        }
        os << "]";
        break;
      case TTPU_ARG_INT: case TTPU_ARG_SCALAR_INT: os << a.i; break;
      case TTPU_ARG_BOOL: case TTPU_ARG_SCALAR_BOOL: os << (a.i ? "True" : "False"); break;
      case TTPU_ARG_DOUBLE: case TTPU_ARG_SCALAR_DOUBLE: os << a.d; break;
      case TTPU_ARG_STRING: os << '"' << a.str << '"'; break;
      case TTPU_ARG_INTLIST: case TTPU_ARG_BOOLLIST:
        os << "[";
        for (int64_t j = 0; j < a.n; ++j) os << (j ? ", " : "") << a.ints[j];
        os << "]";
        break;
      case TTPU_ARG_DOUBLELIST:
        os << "[";
        for (int64_t j = 0; j < a.n; ++j) os << (j ? ", " : "") << a.doubles[j];
        os << "]";
        break;
      default: os << "?";
    }
  }
  return os.str();
}

bool supported_by_go(const c10::FunctionSchema& schema) {
  for (const auto& r : schema.returns()) {
    if (!is_tensor_type(r.type()) && !is_tensor_list_type(r.type())) {
      return false;
    }
  }
  return true;
}

void marshal_arguments(const c10::FunctionSchema& schema, const torch::jit::Stack& stack, ArgList& args) {
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
      args.add_int(seed_for_op(gen, args.device()));
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
  // native_dropout draws random numbers without a Generator argument: it gets a trailing seed from the
  // device's default generator, so torch.manual_seed makes dropout reproducible too.
  if (schema.name() == "aten::native_dropout" && schema.overload_name().empty()) {
    args.add_int(seed_for_op(std::nullopt, args.device()));
  }
}

ttpu_status call_go(const ArgList& args, std::vector<ttpu_out>& outs) {
  check_usable();
  outs.resize(kMaxOuts);
  int32_t nouts = 0;
  ErrBuf err;
  ttpu_status st = ttpu_op(args.op().c_str(), args.data(), args.size(), args.device(), outs.data(), kMaxOuts, &nouts, err.data(),
                           err.len());
  if (st == TTPU_OOM) {
    check(st, err, args.op().c_str());
  }
  if (st == TTPU_ERROR) {
    std::string msg = err.str();
    // Name the op and its arguments unless the engine already did.
    TORCH_CHECK(msg.rfind(args.op(), 0) == 0, args.op(), "(", args.summary(), "): ", msg);
    TORCH_CHECK(false, msg);
  }
  TORCH_CHECK(nouts >= 0 && nouts <= kMaxOuts, "torchtpu: ", args.op(), " returned ", nouts, " outputs");
  outs.resize(nouts);
  return st;
}

at::Tensor wrap_out(const ttpu_out& out, c10::DeviceIndex device) {
  TORCH_CHECK(out.ndim >= 0 && out.ndim <= TTPU_MAX_DIMS, "torchtpu: bad output rank ", out.ndim);
  auto dtype = static_cast<c10::ScalarType>(out.dtype);
  c10::Storage storage(c10::Storage::use_byte_size_t(), static_cast<size_t>(out.nbytes), wrap_address(out.data, device),
                       tpu_allocator(), /*resizable=*/true);
  auto t = at::detail::make_tensor<c10::TensorImpl>(std::move(storage),
                                                    c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                    c10::scalarTypeToTypeMeta(dtype));
  t.unsafeGetTensorImpl()->set_sizes_contiguous(c10::IntArrayRef(out.sizes, out.ndim));
  return t;
}

bool run_op(const std::string& name, const c10::FunctionSchema& schema, torch::jit::Stack* stack) {
  const size_t nargs = schema.arguments().size();
  std::vector<ttpu_out> outs;
  c10::DeviceIndex device = 0;
  for (int attempt = 0;; ++attempt) {
    ArgList args(name);
    marshal_arguments(schema, *stack, args);
    device = args.device();
    ttpu_status st = call_go(args, outs);
    if (st == TTPU_NO_RULE) {
      return false;
    }
    if (st == TTPU_OK) {
      break;
    }
    TORCH_CHECK(st == TTPU_NEEDS_RESIZE && attempt == 0, "torchtpu: ", name, " returned unexpected status ", st);
    // Resize each mutated tensor argument, in argument order, to the sizes Go asks for.
    size_t k = 0;
    const size_t first = stack->size() - nargs;
    for (size_t i = 0; i < nargs; ++i) {
      const auto* ai = schema.arguments()[i].alias_info();
      const auto& v = (*stack)[first + i];
      if (ai == nullptr || !ai->isWrite() || !v.isTensor()) {
        continue;
      }
      TORCH_CHECK(k < outs.size(), "torchtpu: ", name, " asked to resize ", outs.size(),
                  " arguments but has more mutated ones");
      at::native::resize_output(v.toTensor(), c10::IntArrayRef(outs[k].sizes, outs[k].ndim));
      ++k;
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
  for (const auto& r : returns) {
    int w = written_argument(schema, r);
    if (w >= 0) {
      results.push_back((*stack)[first + w]);
    } else if (is_tensor_type(r.type())) {
      TORCH_CHECK(next < outs.size(), "torchtpu: ", name, " returned too few outputs (", outs.size(), ")");
      results.emplace_back(wrap_out(outs[next++], device));
    } else {
      TORCH_CHECK(outs.size() >= singles, "torchtpu: ", name, " returned too few outputs (", outs.size(), ")");
      size_t count = outs.size() - singles;
      std::vector<at::Tensor> list;
      list.reserve(count);
      for (size_t j = 0; j < count; ++j) {
        list.push_back(wrap_out(outs[next++], device));
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
