#include "arg_list.h"

#include <cstring>
#include <sstream>

#include <ATen/ops/_conj_physical.h>
#include <ATen/ops/alias.h>
#include <ATen/ops/neg.h>

#include "allocator.h"
#include "device_guard.h"

namespace torchtpu {

ttpu_tensor describe(const at::Tensor& t) {
  ttpu_tensor d;
  std::memset(&d, 0, sizeof(d));
  d.device = TTPU_DEV_TPU;
  if (!t.defined()) {
    return d;
  }
  const auto& storage = t.storage();
  d.data = address_of(storage.data());
  d.storage_nbytes = static_cast<int64_t>(storage.nbytes());
  d.offset = t.storage_offset();
  d.dtype = static_cast<int32_t>(t.scalar_type());
  d.ndim = static_cast<int32_t>(t.dim());
  d.sizes = t.sizes().data();
  d.strides = t.strides().data();
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
  // Advanced indexing of a CPU tensor by tpu indices: the CPU tensor comes first, before any tpu one.
  TORCH_CHECK(device_.has_value() || t.dim() == 0 || !t.device().is_cpu() ||
                  !(op_ == "aten::index.Tensor" || op_.rfind("aten::index_put", 0) == 0 || op_ == "aten::_index_put_impl_"),
              "indices should be either on cpu or on the same device as the indexed tensor (cpu)");
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

}  // namespace torchtpu
