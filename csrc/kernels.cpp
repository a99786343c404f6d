#include "kernels.h"

#include <ATen/EmptyTensor.h>
#include <ATen/Functions.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/is_set_to_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <numeric>

#include "allocator.h"
#include "device_guard.h"
#include "errors.h"
#include "fallback.h"
#include "fork.h"
#include "availability.h"
#include "go_call.h"
#include "marshal.h"

namespace torchtpu {
namespace {

constexpr c10::DispatchKeySet kTpuKeys(c10::DispatchKey::PrivateUse1);

c10::Device tpu_device(std::optional<c10::Device> device_opt) {
  auto device = c10::device_or_default(device_opt);
  TORCH_CHECK(device.is_privateuseone(), "torchtpu: expected a tpu device, got ", device);
  return c10::Device(c10::DeviceType::PrivateUse1, resolve_index(device.index()));
}

void check_factory_options(std::optional<c10::Layout> layout_opt, std::optional<bool> pin_memory_opt) {
  TORCH_CHECK(c10::layout_or_default(layout_opt) == c10::Layout::Strided,
              "torchtpu: only strided tensors are supported on tpu");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory_opt), "torchtpu: only CPU tensors can be pinned");
}

// fill_if_deterministic fills new memory with NaN (floating and complex) or the dtype's largest value, as CPU and CUDA do
// while deterministic algorithms and torch.utils.deterministic.fill_uninitialized_memory are on. (ATen's empty_generic
// already warns that complex32 is experimental.)
bool deterministic_fill() {
  return at::globalContext().deterministicAlgorithms() && at::globalContext().deterministicFillUninitializedMemory();
}

at::Tensor& fill_if_deterministic(at::Tensor& t) {
  if (C10_UNLIKELY(deterministic_fill()) && t.numel() > 0) {
    at::native::fill_empty_deterministic_(t);
  }
  return t;
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype_opt,
                               std::optional<c10::Layout> layout_opt, std::optional<c10::Device> device_opt,
                               std::optional<bool> pin_memory_opt,
                               std::optional<c10::MemoryFormat> memory_format_opt) {
  check_usable();
  check_factory_options(layout_opt, pin_memory_opt);
  c10::DeviceGuard guard(tpu_device(device_opt));
  at::Tensor t = at::detail::empty_generic(size, tpu_allocator(), kTpuKeys, c10::dtype_or_default(dtype_opt),
                                           memory_format_opt);
  return fill_if_deterministic(t);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype_opt,
                         std::optional<c10::Layout> layout_opt, std::optional<c10::Device> device_opt,
                         std::optional<bool> pin_memory_opt) {
  check_usable();
  check_factory_options(layout_opt, pin_memory_opt);
  c10::DeviceGuard guard(tpu_device(device_opt));
  at::Tensor t = at::detail::empty_strided_generic(size, stride, tpu_allocator(), kTpuKeys,
                                                   c10::dtype_or_default(dtype_opt));
  return fill_if_deterministic(t);
}

// _efficientzerotensor makes the zeros autograd and torch.func use as placeholders, which CPU keeps without
// memory (a ZeroTensor). tpu makes plain zeros: every op gives the same values; only a ZeroTensor's refusal of
// in-place writes is not reproduced.
at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype_opt,
                                 std::optional<c10::Layout> layout_opt, std::optional<c10::Device> device_opt,
                                 std::optional<bool> pin_memory_opt) {
  at::Tensor t = empty_memory_format(size, dtype_opt, layout_opt, device_opt, pin_memory_opt, std::nullopt);
  return t.zero_();
}

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size) { return at::native::view(self, size); }

at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

at::Tensor unfold(const at::Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  return at::native::unfold(self, dimension, size, step);
}

at::Tensor view_as_real(const at::Tensor& self) { return at::native::view_as_real(self); }

at::Tensor view_as_complex(const at::Tensor& self) { return at::native::view_as_complex(self); }

// grow_storage makes self's storage large enough for nbytes (never shrinks it).
void grow_storage(c10::TensorImpl* impl, size_t nbytes) {
  if (impl->numel() == 0) {
    return;
  }
  const auto& storage = impl->unsafe_storage();
  if (nbytes > storage.nbytes()) {
    resize_storage_bytes(storage.unsafeGetStorageImpl(), nbytes);
  }
}

// resize_impl sets sizes (and strides when given) and grows the storage to fit, like resize_impl_cpu_.
void resize_impl(c10::TensorImpl* impl, c10::IntArrayRef size, std::optional<c10::IntArrayRef> stride) {
  if (impl->sizes() == size && (!stride || impl->strides() == *stride)) {
    return;
  }
  const auto itemsize = impl->dtype().itemsize();
  const auto offset = impl->storage_offset();
  size_t nbytes = 0;
  if (stride) {
    impl->set_sizes_and_strides(size, *stride);
    nbytes = at::detail::computeStorageNbytes(size, *stride, itemsize, offset);
  } else {
    impl->set_sizes_contiguous(size);
    nbytes = at::detail::computeStorageNbytesContiguous(size, itemsize, offset);
  }
  grow_storage(impl, nbytes);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  check_usable();
  auto* impl = self.unsafeGetTensorImpl();
  const int64_t old_nbytes = impl->unsafe_storage() ? static_cast<int64_t>(impl->unsafe_storage().nbytes()) : 0;
  resize_impl(impl, size, std::nullopt);
  if (C10_UNLIKELY(deterministic_fill())) {
    at::native::fill_resize_deterministic_(self, old_nbytes);
  }
  if (memory_format) {
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve, "Unsupported memory format ", *memory_format);
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Tensor& set_storage_offset(at::Tensor& self, c10::Storage source, int64_t storage_offset, c10::IntArrayRef size,
                               c10::IntArrayRef stride) {
  check_usable();
  at::native::checkSetStorage(self, std::move(source), storage_offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  std::optional<c10::IntArrayRef> stride_opt =
      stride.data() != nullptr ? std::optional<c10::IntArrayRef>(stride) : std::nullopt;
  resize_impl(self.unsafeGetTensorImpl(), size, stride_opt);
  return self;
}

// big_unsigned says whether value is an unsigned integer beyond int64's range, which the boxed path cannot hold.
bool big_unsigned(const at::Scalar& value) {
  return value.type() == c10::ScalarType::UInt64 && value.to<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
}

// fill_scalar fills self with value through Go's fill_ rule. The boxed path holds integers as int64, so an unsigned
// value beyond int64's range is first stored by CPU's fill_ into one element of self's dtype (which raises CPU's
// overflow error where CPU does); a uint64 tensor then fills an int64 view of the same bits, others that element.
at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  if (big_unsigned(value)) {
    const at::Tensor one = at::empty({}, self.options().device(c10::kCPU)).fill_(value);
    if (self.scalar_type() == c10::ScalarType::UInt64) {
      self.view(c10::ScalarType::Long).fill_(static_cast<int64_t>(value.to<uint64_t>()));
      return self;
    }
    return self.fill_(one.item());
  }
  static const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::fill_", "Scalar");
  torch::jit::Stack stack{self, value};
  tpu_fallback(op, &stack);
  return self;
}

// compare_scalar is eq/ne/lt/le/gt/ge(Tensor, Scalar). A value beyond int64 (a uint64 bound CPU compares with)
// compares as a double with floating tensors, as a uint64 tensor with uint64 ones, and wrapped to the tensor's
// type with other integer types, as on CPU; other values take the boxed path to Go's rule.
template <int kind>
at::Tensor compare_scalar(const at::Tensor& self, const at::Scalar& other) {
  static const char* names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  if (big_unsigned(other)) {
    const auto st = self.scalar_type();
    if (at::isFloatingType(st) || at::isComplexType(st)) {
      return compare_scalar<kind>(self, at::Scalar(static_cast<double>(other.to<uint64_t>())));
    }
    if (st == c10::ScalarType::UInt64) {
      const at::Tensor bound = at::scalar_tensor(other, self.options());
      static const c10::OperatorHandle op =
          c10::Dispatcher::singleton().findSchemaOrThrow((std::string("aten::") + names[kind]).c_str(), "Tensor");
      torch::jit::Stack stack{self, bound};
      tpu_fallback(op, &stack);
      return stack.back().toTensor();
    }
    TORCH_CHECK(st != c10::ScalarType::Bool,
                "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote Bool and UInt64");
    // CPU casts the value to the tensor's integer type, wrapping: 2**64 - 1 compares as -1 (255 for uint8).
    return compare_scalar<kind>(self, at::Scalar(static_cast<int64_t>(other.to<uint64_t>())));
  }
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow((std::string("aten::") + names[kind]).c_str(), "Scalar");
  torch::jit::Stack stack{self, other};
  tpu_fallback(op, &stack);
  return stack.back().toTensor();
}

// index_on_device runs index_fill with an index held on the CPU: CPU PyTorch takes one of any size, and the tpu
// rule takes device tensors and CPU scalars, so the index moves to the device first.
void index_on_device(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t begin = stack->size() - args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    auto& v = (*stack)[begin + i];
    if (args[i].name() == "index" && v.isTensor() && v.toTensor().is_cpu() && v.toTensor().dim() > 0) {
      const at::Tensor self = (*stack)[begin].toTensor();
      v = v.toTensor().to(self.device());
    }
  }
  tpu_fallback(op, stack);
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source) { return at::native::set_(self, std::move(source)); }

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) { return at::native::set_tensor_(self, source); }

at::Tensor& set_empty(at::Tensor& self) {
  check_usable();
  c10::DeviceGuard guard(self.device());
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, tpu_allocator(), /*resizable=*/true);
  self.set_(storage, 0, {0}, {});
  return self;
}

// raw_alias returns an alias of t without its conjugate and negative bits: the values its memory holds.
at::Tensor raw_alias(const at::Tensor& t) {
  if (!t.is_conj() && !t.is_neg()) {
    return t;
  }
  at::Tensor raw = at::alias(t);
  raw._set_conj(false);
  raw._set_neg(false);
  return raw;
}

// copy_ is PyTorch's copy_ with one addition: a destination with the conjugate or negative bit set (x.conj(),
// x.conj().imag) receives the values through those bits. PyTorch's own path resolves such a destination into a
// clone before _copy_from, which would lose the write.
at::Tensor& copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  materialize_cow(self);
  if (!self.is_conj() && !self.is_neg()) {
    return at::native::copy_(self, src, non_blocking);
  }
  at::Tensor v = src;
  if (self.is_conj()) {
    v = v.conj();
  }
  if (self.is_neg()) {
    v = v._neg_view();
  }
  raw_alias(self).copy_(v, non_blocking);
  return self;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  check_usable();
  TORCH_CHECK(self.defined() && dst.defined(), "torchtpu: copy of an undefined tensor");
  if (dst.numel() == 0) {
    return dst;
  }
  const bool src_tpu = self.device().is_privateuseone();
  const bool dst_tpu = dst.device().is_privateuseone();
  if (src_tpu && dst_tpu) {
    if (self.device() == dst.device()) {
      ArgList args("aten::copy_");
      args.add_tensor(dst);
      args.add_tensor(self);
      args.add_bool(non_blocking);
      std::vector<ttpu_out> outs;
      if (call_go(args, outs) == TTPU_OK) {
        return dst;
      }
    }
    from_host(dst, to_host(self));
  } else if (dst_tpu) {
    TORCH_CHECK(self.device().is_cpu(), "torchtpu: cannot copy from ", self.device(), " to ", dst.device());
    from_host(dst, self);
  } else {
    TORCH_CHECK(dst.device().is_cpu(), "torchtpu: cannot copy from ", self.device(), " to ", dst.device());
    if (!to_host_into(self, dst)) {
      dst.copy_(to_host(self));
    }
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  return to_host(self).item();
}

// equal returns a bool, which the Go op table cannot: it compares on the device with eq and all and
// reads the one result back, a sync point as on CUDA.
bool equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ",
              self.device(), " and ", other.device());
  TORCH_CHECK(self.dtype() == other.dtype(), "Expected self and other to have same dtype, but got ", self.dtype(),
              " and ", other.dtype());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kComplexHalf, "\"equal_cpu\" not implemented for 'ComplexHalf'");
  if (!self.is_same_size(other)) {
    return false;
  }
  // CPU compares a tensor with itself (the same view of the same storage) by looking for NaNs, a kernel
  // it lacks for float8.
  const bool same_view = self.is_alias_of(other) && self.storage_offset() == other.storage_offset() &&
                         self.strides().equals(other.strides()) && self.is_neg() == other.is_neg() &&
                         self.is_conj() == other.is_conj();
  TORCH_CHECK_NOT_IMPLEMENTED(!same_view || !c10::isFloat8Type(self.scalar_type()),
                              "\"equal_notnan_cpu\" not implemented for '", self.scalar_type(), "'");
  if (self.numel() == 0) {
    return true;
  }
  return at::eq(self, other).all().item<bool>();
}

bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  auto plain = [](const at::Tensor& t) {
    return t.layout() == c10::Layout::Strided && !t.is_quantized() &&
           (t.device().is_cpu() || t.device().is_privateuseone());
  };
  return self.key_set() == from.key_set() || (plain(self) && plain(from));
}

}  // namespace

namespace {

// read_into copies the tpu view src, as its raw memory, into the contiguous CPU tensor dst of its dtype and sizes.
void read_into(const at::Tensor& src, const at::Tensor& dst) {
  ttpu_tensor desc = describe(src);
  ErrBuf err;
  check(ttpu_to_host(&desc, dst.data_ptr(), static_cast<int64_t>(dst.nbytes()), err.data(), err.len()), err,
        "ttpu_to_host");
}

}  // namespace

bool to_host_into(const at::Tensor& src, const at::Tensor& dst) {
  if (dst.scalar_type() != src.scalar_type() || !dst.sizes().equals(src.sizes()) || dst.is_conj() || dst.is_neg() ||
      src.is_conj() || src.is_neg()) {
    return false;
  }
  if (dst.is_contiguous()) {
    check_usable();
    read_into(src, dst);
    return true;
  }
  // A dense tensor in another memory order (channels_last, a transpose) copied into a host tensor of the same
  // strides (`.cpu()` keeps them): both seen in that memory order are contiguous, and the tpu view is then
  // often its whole storage, which is read from its buffer as it is, with no program.
  if (!dst.strides().equals(src.strides()) || !src.is_non_overlapping_and_dense()) {
    return false;
  }
  std::vector<int64_t> order(static_cast<size_t>(src.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return src.stride(a) > src.stride(b); });
  const at::Tensor d = dst.permute(order);
  if (!d.is_contiguous()) {
    return false;
  }
  check_usable();
  read_into(src.permute(order), d);
  return true;
}

at::Tensor to_host(const at::Tensor& src) {
  check_usable();
  at::Tensor out = at::empty(src.sizes(), at::TensorOptions().dtype(src.scalar_type()).device(c10::kCPU));
  if (out.numel() == 0) {
    return out;
  }
  read_into(src, out);
  // The memory came over as it is: the host tensor shows it through src's conjugate and negative bits.
  out._set_conj(src.is_conj());
  out._set_neg(src.is_neg());
  return out;
}

void from_host(const at::Tensor& dst, const at::Tensor& src) {
  check_usable();
  at::Tensor host = src.resolve_conj().resolve_neg().to(dst.scalar_type()).expand(dst.sizes()).contiguous();
  if (host.numel() == 0) {
    return;
  }
  ttpu_tensor desc = describe(dst);
  ErrBuf err;
  check(ttpu_from_host(&desc, host.data_ptr(), static_cast<int64_t>(host.nbytes()), err.data(), err.len()), err,
        "ttpu_from_host");
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("_efficientzerotensor", TORCH_FN(efficient_zero_tensor));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("view", TORCH_FN(view));
  m.impl("_reshape_alias", TORCH_FN(reshape_alias));
  m.impl("unfold", TORCH_FN(unfold));
  m.impl("view_as_real", TORCH_FN(view_as_real));
  m.impl("view_as_complex", TORCH_FN(view_as_complex));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage", TORCH_FN(set_storage));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage_offset));
  m.impl("set_.source_Tensor", TORCH_FN(set_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("copy_", TORCH_FN(copy_));
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
  m.impl("eq.Scalar", TORCH_FN(compare_scalar<0>));
  m.impl("ne.Scalar", TORCH_FN(compare_scalar<1>));
  m.impl("lt.Scalar", TORCH_FN(compare_scalar<2>));
  m.impl("le.Scalar", TORCH_FN(compare_scalar<3>));
  m.impl("gt.Scalar", TORCH_FN(compare_scalar<4>));
  m.impl("ge.Scalar", TORCH_FN(compare_scalar<5>));
  for (const char* name : {"index_fill.int_Scalar", "index_fill.int_Tensor", "index_fill_.int_Scalar",
                           "index_fill_.int_Tensor"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&index_on_device>());
  }
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("equal", TORCH_FN(equal));
  m.impl("is_set_to", TORCH_FN(at::native::is_set_to));  // compares storage, offset and geometry only
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
}

}  // namespace torchtpu
