#include "layout.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <numeric>
#include <string>
#include <unordered_map>

#include <ATen/ops/empty_strided.h>
#include <c10/util/Exception.h>

namespace torchtpu {
namespace {

// contiguous_strides reports whether strides are exactly the contiguous ones of sizes (size-1
// dimensions included: PyTorch's layout rules read their strides too).
bool contiguous_strides(c10::IntArrayRef sizes, c10::IntArrayRef strides) {
  int64_t expect = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    if (strides[i] != expect) {
      return false;
    }
    expect *= std::max<int64_t>(sizes[i], 1);
  }
  return true;
}

// plain reports whether a tpu tensor argument leaves its results' layout to the contiguous default.
bool plain(const at::Tensor& t) {
  if (!t.defined() || !t.device().is_privateuseone() || t.numel() == 0) {
    return true;
  }
  return t.is_contiguous() && contiguous_strides(t.sizes(), t.strides());
}

bool plain_value(const c10::IValue& v) {
  if (v.isTensor()) {
    return plain(v.toTensor());
  }
  if (v.isList()) {
    for (const auto& e : v.toListRef()) {
      if (e.isTensor() && !plain(e.toTensor())) {
        return false;
      }
    }
  }
  return true;
}

// Key appends the metadata of argument values that can decide a result's layout: tensors' dtypes,
// sizes and strides, integers, booleans, strings; not the values of floating-point numbers.
class Key {
 public:
  explicit Key(const LayoutSource* src) { raw(src); }

  void value(const c10::IValue& v) {
    if (v.isNone()) {
      tag('N');
    } else if (v.isTensor()) {
      tensor(v.toTensor());
    } else if (v.isList()) {
      const auto& list = v.toListRef();
      tag('L');
      raw(static_cast<int64_t>(list.size()));
      for (const auto& e : list) value(e);
    } else if (v.isInt()) {
      tag('I');
      raw(v.toInt());
    } else if (v.isSymInt()) {
      tag('I');
      raw(v.toSymInt().guard_int(__FILE__, __LINE__));
    } else if (v.isBool()) {
      tag(v.toBool() ? 'T' : 'F');
    } else if (v.isString()) {
      tag('S');
      const auto& s = v.toStringRef();
      raw(static_cast<int64_t>(s.size()));
      k_.append(s);
    } else if (v.isDevice()) {
      tag('V');
      raw(static_cast<int64_t>(v.toDevice().type()));
    } else {
      tag('O');
      raw(static_cast<int64_t>(v.tagKind().size()));
      k_.append(v.tagKind());
    }
  }

  const std::string& str() const { return k_; }

 private:
  void tag(char c) { k_.push_back(c); }
  template <typename T>
  void raw(T v) {
    k_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }

  void tensor(const at::Tensor& t) {
    if (!t.defined()) {
      tag('U');
      return;
    }
    tag(t.device().is_privateuseone() ? 'P' : (t.unsafeGetTensorImpl()->is_wrapped_number() ? 'W' : 'C'));
    raw(static_cast<int8_t>(t.scalar_type()));
    raw(static_cast<int8_t>(t.dim()));
    for (auto s : t.sizes()) raw(s);
    for (auto s : t.strides()) raw(s);
  }

  std::string k_;
};

// to_meta turns the tpu tensors in v into meta tensors of the same sizes, strides and dtype (CPU
// scalars stay), drops generators and moves tpu devices to meta.
c10::IValue to_meta(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined() || !t.device().is_privateuseone()) {
      return v;
    }
    return at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
  }
  if (v.isList()) {
    auto list = v.toList();
    c10::impl::GenericList out(list.elementType());
    out.reserve(list.size());
    for (const auto& e : v.toListRef()) out.push_back(to_meta(e));
    return out;
  }
  if (v.isGenerator()) {
    return c10::IValue();
  }
  if (v.isDevice() && v.toDevice().is_privateuseone()) {
    return c10::Device(c10::kMeta);
  }
  return v;
}

// layout_of reads a meta result's layout: strided only where the strides differ from the contiguous
// ones and describe a dense, non-overlapping tensor the engine can lay out by a permutation.
ResultLayout layout_of(const at::Tensor& t, ttpu_layout& order) {
  ResultLayout l;
  std::memset(&order, 0, sizeof(order));
  if (!t.defined() || t.numel() == 0 || t.dim() > TTPU_MAX_DIMS) {
    return l;
  }
  l.sizes = t.sizes().vec();
  l.strides = t.strides().vec();
  if (contiguous_strides(t.sizes(), t.strides())) {
    return l;
  }
  const int64_t n = t.dim();
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return l.strides[a] > l.strides[b]; });
  int64_t expect = 1;
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t d = perm[static_cast<size_t>(i)];
    if (l.sizes[d] != 1 && l.strides[d] != expect) {
      return l;  // overlapping or with gaps: the result stays contiguous
    }
    expect *= l.sizes[d];
  }
  l.strided = true;
  bool identity = true;
  for (int64_t i = 0; i < n; ++i) {
    identity = identity && perm[static_cast<size_t>(i)] == i;
    order.perm[i] = perm[static_cast<size_t>(i)];
  }
  order.ndim = identity ? 0 : static_cast<int32_t>(n);
  return l;
}

std::shared_ptr<const ResultLayouts> format_layouts(int64_t n, c10::MemoryFormat format);

// convolution_layouts gives a forward convolution's result the memory format CPU PyTorch's
// convolution picks (oneDNN's and the native kernels' rule): channels_last when the input or the weight
// suggests it, channels_last_3d likewise for 5-D float types oneDNN takes. The meta kernel cannot
// answer: it always gives a contiguous result.
std::shared_ptr<const ResultLayouts> convolution_layouts(const torch::jit::Stack& stack, size_t first) {
  const auto& in = stack[first];
  const auto& w = stack[first + 1];
  if (!in.isTensor() || !w.isTensor() || !in.toTensor().defined() || !w.toTensor().defined()) {
    return nullptr;
  }
  const at::Tensor& input = in.toTensor();
  const at::Tensor& weight = w.toTensor();
  const int64_t n = input.dim();
  auto format = c10::MemoryFormat::Contiguous;
  const auto fi = input.suggest_memory_format();
  const auto fw = weight.suggest_memory_format();
  if (n == 4 && (fi == c10::MemoryFormat::ChannelsLast || fw == c10::MemoryFormat::ChannelsLast)) {
    format = c10::MemoryFormat::ChannelsLast;
  } else if (n == 5 && input.scalar_type() != at::kDouble &&
             (fi == c10::MemoryFormat::ChannelsLast3d || fw == c10::MemoryFormat::ChannelsLast3d)) {
    format = c10::MemoryFormat::ChannelsLast3d;
  }
  return format_layouts(n, format);
}

// suggested_layouts gives the first result the memory format CPU's kernel allocates it in,
// input.suggest_memory_format(): reflection and replication pads (whose meta kernels answer contiguous)
// and batch norm (whose meta kernel keeps any dense input's strides, where CPU's result is contiguous for
// a transposed input).
std::shared_ptr<const ResultLayouts> suggested_layouts(const torch::jit::Stack& stack, size_t first) {
  const auto& in = stack[first];
  if (!in.isTensor() || !in.toTensor().defined()) {
    return nullptr;
  }
  const at::Tensor& input = in.toTensor();
  const auto f = input.suggest_memory_format();
  if ((input.dim() == 4 && f == c10::MemoryFormat::ChannelsLast) ||
      (input.dim() == 5 && f == c10::MemoryFormat::ChannelsLast3d)) {
    return format_layouts(input.dim(), f);
  }
  return nullptr;
}

// lapack_layouts gives geqrf's and _linalg_svd's matrix results the column-major layout CPU's LAPACK
// calls leave them in (their meta kernels cannot answer: geqrf has none, svd's answers row-major for Vh).
// Results are described by rank: geqrf returns (a, tau), svd (U, S, Vh), each rank n or n-1 for an
// input of rank n.
std::shared_ptr<const ResultLayouts> lapack_layouts(const std::string& name, const torch::jit::Stack& stack,
                                                    size_t first) {
  const auto& in = stack[first];
  if (!in.isTensor() || !in.toTensor().defined() || in.toTensor().dim() < 2) {
    return nullptr;
  }
  if (name == "aten::_linalg_svd" && stack.size() > first + 2 && stack[first + 2].isBool() &&
      !stack[first + 2].toBool()) {
    return nullptr;  // no U and Vh (compute_uv false)
  }
  const int64_t n = in.toTensor().dim();
  const std::vector<bool> matrix = name == "aten::geqrf" ? std::vector<bool>{true, false}
                                                         : std::vector<bool>{true, false, true};
  auto out = std::make_shared<ResultLayouts>();
  for (bool m : matrix) {
    ResultLayout l;
    ttpu_layout order;
    std::memset(&order, 0, sizeof(order));
    if (m) {
      l.strided = l.dense = true;
      order.ndim = static_cast<int32_t>(n);
      for (int64_t i = 0; i < n; ++i) order.perm[i] = i;
      order.perm[n - 2] = n - 1;
      order.perm[n - 1] = n - 2;
    }
    out->results.push_back(l);
    out->orders.push_back(order);
  }
  return out;
}

// fft_r2c_layouts gives a real-to-complex FFT's result CPU's layout, outermost first: the dimensions not
// transformed, then the transformed ones but the last named, each group in ascending order, then the last
// named (the one halved). The meta kernel disagrees with CPU when several dimensions are transformed.
std::shared_ptr<const ResultLayouts> fft_r2c_layouts(const torch::jit::Stack& stack, size_t first) {
  const auto& in = stack[first];
  if (!in.isTensor() || !in.toTensor().defined() || !stack[first + 1].isIntList()) {
    return nullptr;
  }
  const int64_t n = in.toTensor().dim();
  std::vector<int64_t> dims;
  for (int64_t d : stack[first + 1].toIntVector()) dims.push_back(d < 0 ? d + n : d);
  std::vector<int64_t> order;
  for (int64_t d = 0; d < n; ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) order.push_back(d);
  }
  if (!dims.empty()) {
    std::vector<int64_t> rest(dims.begin(), dims.end() - 1);
    std::sort(rest.begin(), rest.end());
    order.insert(order.end(), rest.begin(), rest.end());
    order.push_back(dims.back());
  }
  if (static_cast<int64_t>(order.size()) != n || n > TTPU_MAX_DIMS) {
    return nullptr;
  }
  bool identity = true;
  for (int64_t i = 0; i < n; ++i) identity = identity && order[static_cast<size_t>(i)] == i;
  if (identity) {
    return nullptr;
  }
  auto out = std::make_shared<ResultLayouts>();
  ResultLayout l;
  l.strided = l.dense = true;
  ttpu_layout o;
  std::memset(&o, 0, sizeof(o));
  o.ndim = static_cast<int32_t>(n);
  for (int64_t i = 0; i < n; ++i) o.perm[i] = order[static_cast<size_t>(i)];
  out->results.push_back(l);
  out->orders.push_back(o);
  return out;
}

// format_layouts describes one result of n dimensions in memory format format (nullptr for contiguous).
std::shared_ptr<const ResultLayouts> format_layouts(int64_t n, c10::MemoryFormat format) {
  if (format == c10::MemoryFormat::Contiguous) {
    return nullptr;
  }
  auto out = std::make_shared<ResultLayouts>();
  ResultLayout l;
  l.strided = l.dense = true;
  ttpu_layout order;
  std::memset(&order, 0, sizeof(order));
  order.ndim = static_cast<int32_t>(n);
  order.perm[0] = 0;
  for (int64_t i = 1; i < n - 1; ++i) order.perm[i] = i + 1;
  order.perm[n - 1] = 1;
  out->results.push_back(l);
  out->orders.push_back(order);
  return out;
}

// meta_layouts runs src's op on meta twins of the arguments and reads its new results' layouts, or
// returns nullptr when they are all contiguous or the op has no meta kernel.
std::shared_ptr<const ResultLayouts> meta_layouts(const LayoutSource& src, const torch::jit::Stack& stack) {
  const auto& schema = src.op->schema();
  const size_t nargs = schema.arguments().size();
  torch::jit::Stack meta;
  meta.reserve(nargs);
  for (size_t i = stack.size() - nargs; i < stack.size(); ++i) {
    meta.push_back(to_meta(stack[i]));
  }
  try {
    src.op->callBoxed(&meta);
  } catch (const std::exception&) {
    return nullptr;  // no meta kernel (or it refuses these arguments): the results stay contiguous
  }
  const auto& returns = schema.returns();
  if (meta.size() != returns.size()) {
    return nullptr;
  }
  auto out = std::make_shared<ResultLayouts>();
  bool any = false;
  auto add = [&](const at::Tensor& t) {
    ttpu_layout order;
    out->results.push_back(layout_of(t, order));
    out->orders.push_back(order);
    any = any || out->results.back().strided;
  };
  for (size_t r = 0; r < returns.size(); ++r) {
    const auto* alias = returns[r].alias_info();
    if (alias != nullptr && alias->isWrite()) {
      continue;
    }
    const c10::IValue& v = meta[r];
    if (v.isTensor()) {
      add(v.toTensor());
    } else if (v.isTensorList()) {
      for (const auto& t : v.toTensorList()) add(t);
    } else {
      return nullptr;
    }
  }
  return any ? std::move(out) : nullptr;
}

}  // namespace

LayoutSource layout_source(const c10::OperatorHandle& op) {
  LayoutSource src;
  src.op = op;
  const auto& schema = op.schema();
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    auto real = args[i].real_type();
    if (auto o = real->cast<c10::OptionalType>()) {
      real = o->getElementType();
    }
    if (real->kind() == c10::TypeKind::MemoryFormatType) {
      src.memory_format_arg = static_cast<int>(i);
    }
  }
  const auto& name = op.operator_name().name;
  src.convolution = name == "aten::convolution" || name == "aten::convolution_overrideable";
  src.suggested = name == "aten::reflection_pad2d" || name == "aten::reflection_pad3d" ||
                  name == "aten::replication_pad2d" || name == "aten::replication_pad3d" ||
                  name == "aten::native_batch_norm" || name == "aten::_native_batch_norm_legit" ||
                  name == "aten::_native_batch_norm_legit_no_training";
  // CPU's FFTs put the transformed dimensions innermost in memory whatever the input's layout, and its
  // LAPACK-backed linear algebra gives column-major matrices; the meta kernels give the same strides, so
  // these ops' layouts are asked for even when every argument is contiguous.
  src.permuted = name == "aten::_fft_c2c" || name == "aten::_fft_r2c" || name == "aten::_fft_c2r" ||
                 name.rfind("aten::linalg_", 0) == 0 || name.rfind("aten::_linalg_", 0) == 0 ||
                 name == "aten::cholesky" || name == "aten::cholesky_inverse" ||
                 name == "aten::_cholesky_solve_helper" || name == "aten::triangular_solve" ||
                 name == "aten::geqrf" || name == "aten::ormqr" || name == "aten::nonzero";
  for (const auto& r : schema.returns()) {
    src.fresh = src.fresh || r.alias_info() == nullptr || !r.alias_info()->isWrite();
  }
  return src;
}

std::shared_ptr<const ResultLayouts> out_layouts(const LayoutSource& src, const torch::jit::Stack& stack) {
  if (!src.op) {
    return nullptr;
  }
  const auto& name = src.op->operator_name();
  const std::string& overload = name.overload_name;
  // The twin's overload name: exp.out's is exp's, add.out's add.Tensor, pow.Tensor_Scalar_out's
  // pow.Tensor_Scalar; among several, the one whose arguments are the out= op's unwritten ones.
  std::vector<std::string> names;
  if (overload == "out") {
    names = {"", "Tensor", "Scalar", "self", "int", "dim"};
  } else if (overload.size() > 4 && overload.compare(overload.size() - 4, 4, "_out") == 0) {
    names = {overload.substr(0, overload.size() - 4)};
  } else {
    return nullptr;
  }
  const auto& schema = src.op->schema();
  const size_t nargs = schema.arguments().size();
  std::vector<const c10::Argument*> unwritten;
  torch::jit::Stack inputs;
  for (size_t i = 0; i < nargs; ++i) {
    const auto* ai = schema.arguments()[i].alias_info();
    if (ai == nullptr || !ai->isWrite()) {
      unwritten.push_back(&schema.arguments()[i]);
      inputs.push_back(stack[stack.size() - nargs + i]);
    }
  }
  std::optional<c10::OperatorHandle> handle;
  for (const auto& n : names) {
    auto h = c10::Dispatcher::singleton().findOp({name.name, n});
    if (!h || h->schema().arguments().size() != unwritten.size()) {
      continue;
    }
    bool same = true;
    for (size_t i = 0; same && i < unwritten.size(); ++i) {
      same = *h->schema().arguments()[i].type() == *unwritten[i]->type();
    }
    if (same) {
      handle = h;
      break;
    }
  }
  if (!handle) {
    return nullptr;
  }
  const LayoutSource twin = layout_source(*handle);
  if (twin.permuted) {
    return nullptr;  // FFTs and LAPACK-backed ops resize their out= tensors contiguous or column-major
  }
  return result_layouts(twin, inputs);
}

std::vector<int64_t> strides_in(const ResultLayouts& ls, size_t k, c10::IntArrayRef sizes) {
  if (k >= ls.results.size() || !ls.results[k].strided) {
    return {};
  }
  const ResultLayout& l = ls.results[k];
  const size_t n = sizes.size();
  if (l.dense) {
    const ttpu_layout& order = ls.orders[k];
    if (static_cast<size_t>(order.ndim) != n) {
      return {};
    }
    std::vector<int64_t> strides(n);
    int64_t stride = 1;
    for (int64_t i = static_cast<int64_t>(n) - 1; i >= 0; --i) {
      const auto d = static_cast<size_t>(order.perm[i]);
      strides[d] = stride;
      stride *= std::max<int64_t>(sizes[d], 1);
    }
    return strides;
  }
  if (c10::IntArrayRef(l.sizes) != sizes) {
    return {};
  }
  return l.strides;
}

std::shared_ptr<const ResultLayouts> result_layouts(const LayoutSource& src, const torch::jit::Stack& stack) {
  if (!src.fresh || !src.op) {
    return nullptr;
  }
  const size_t nargs = src.op->schema().arguments().size();
  const size_t first = stack.size() - nargs;
  if (src.convolution) {
    return convolution_layouts(stack, first);
  }
  if (src.suggested) {
    return suggested_layouts(stack, first);
  }
  if (src.permuted) {
    const auto& name = src.op->operator_name().name;
    if (name == "aten::geqrf" || name == "aten::_linalg_svd") {
      return lapack_layouts(name, stack, first);
    }
    if (name == "aten::_fft_r2c") {
      return fft_r2c_layouts(stack, first);
    }
    if (name == "aten::nonzero") {
      // CPU fills the transpose of a (dims, count) buffer: the (count, dims) result is column-major.
      auto out = std::make_shared<ResultLayouts>();
      ResultLayout l;
      l.strided = l.dense = true;
      ttpu_layout o;
      std::memset(&o, 0, sizeof(o));
      o.ndim = 2;
      o.perm[0] = 1;
      o.perm[1] = 0;
      out->results.push_back(l);
      out->orders.push_back(o);
      return out;
    }
  }
  bool plain_args = !src.permuted;
  for (size_t i = first; i < stack.size() && plain_args; ++i) {
    plain_args = plain_value(stack[i]);
  }
  if (plain_args && src.memory_format_arg >= 0) {
    const auto& mf = stack[first + static_cast<size_t>(src.memory_format_arg)];
    plain_args = mf.isNone() || mf.toInt() == static_cast<int64_t>(c10::MemoryFormat::Contiguous) ||
                 mf.toInt() == static_cast<int64_t>(c10::MemoryFormat::Preserve);
  }
  if (plain_args) {
    return nullptr;
  }
  Key key(&src);
  for (size_t i = first; i < stack.size(); ++i) {
    key.value(stack[i]);
  }
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const ResultLayouts>> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key.str());
    if (it != cache.end()) {
      return it->second;
    }
  }
  auto layouts = meta_layouts(src, stack);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= 4096) {
    cache.clear();
  }
  cache.emplace(key.str(), layouts);
  return layouts;
}

void apply_layout(at::Tensor& t, const ttpu_out& out, const ResultLayouts& ls, const std::string& op, size_t k) {
  if (k >= ls.results.size() || !ls.results[k].strided) {
    return;
  }
  const ResultLayout& l = ls.results[k];
  if (l.dense) {
    // Sizes and strides follow from the sizes the engine laid out in memory order.
    const ttpu_layout& order = ls.orders[k];
    TORCH_CHECK(out.ndim == order.ndim, "torchtpu: ", op, " result ", k, " has ", out.ndim,
                " dimensions; its memory order names ", order.ndim);
    std::vector<int64_t> sizes(static_cast<size_t>(out.ndim)), strides(static_cast<size_t>(out.ndim));
    int64_t stride = 1;
    for (int64_t i = out.ndim - 1; i >= 0; --i) {
      sizes[static_cast<size_t>(order.perm[i])] = out.sizes[i];
      strides[static_cast<size_t>(order.perm[i])] = stride;
      stride *= out.sizes[i];
    }
    t.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides);
    return;
  }
  const size_t n = l.sizes.size();
  const bool transposed = ls.orders[k].ndim > 0;
  if (static_cast<size_t>(out.ndim) != n || (!transposed && !std::equal(l.sizes.begin(), l.sizes.end(), out.sizes))) {
    return;  // the engine kept the result contiguous (its rank or sizes differ from the meta function's)
  }
  // The engine wrote the result in memory order: its sizes are PyTorch's, outermost stride first.
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return l.strides[a] > l.strides[b]; });
  bool same = static_cast<size_t>(out.ndim) == n;
  for (size_t i = 0; same && i < n; ++i) {
    same = out.sizes[i] == l.sizes[static_cast<size_t>(order[i])];
  }
  TORCH_CHECK(same, "torchtpu: ", op, " result ", k, " has sizes ", c10::IntArrayRef(out.sizes, out.ndim),
              " in memory, but PyTorch's meta function gives sizes ", c10::IntArrayRef(l.sizes), " with strides ",
              c10::IntArrayRef(l.strides));
  t.unsafeGetTensorImpl()->set_sizes_and_strides(l.sizes, l.strides);
}

}  // namespace torchtpu
