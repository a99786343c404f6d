#include "op_alerts.h"

#include <string_view>

#include <ATen/Context.h>
#include <c10/util/Exception.h>

namespace torchtpu {
namespace {

// expanded reports whether tensor argument i has two elements at one address (a stride of 0 over a dimension
// of more than one element), what ATen's has_internal_overlap answers YES for.
bool expanded(const ArgList& args, int i) {
  if (i >= args.size() || args.data()[i].kind != TTPU_ARG_TENSOR) {
    return false;
  }
  const ttpu_tensor& t = args.data()[i].tensors[0];
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (t.strides[d] == 0 && t.sizes[d] > 1) {
      return true;
    }
  }
  return false;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The ops whose CPU kernels alert under deterministic algorithms whatever the device: scattering unpooled values
// and put_ without accumulation write one place from several when indices repeat.
void alert_nondeterministic(const ArgList& args) {
  std::string_view op = args.op();
  if (starts_with(op, "aten::max_unpool2d")) {
    at::globalContext().alertNotDeterministic("max_unpooling2d_forward_out");
  } else if (starts_with(op, "aten::max_unpool3d")) {
    at::globalContext().alertNotDeterministic("max_unpooling3d_forward_out");
  } else if ((op == "aten::put_" || op == "aten::put") && args.size() > 3 && args.data()[3].i == 0) {
    at::globalContext().alertNotDeterministic("put_");
  }
}

// CPU's deprecation warnings for in-place writes into an expanded self, which it still performs.
void warn_expanded_write(const ArgList& args) {
  std::string_view op = args.op();
  if (starts_with(op, "aten::masked_fill_")) {
    if (expanded(args, 0)) {
      TORCH_WARN(
          "Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing this "
          "operation. This also applies to advanced indexing e.g. tensor[mask] = scalar");
    }
  } else if (starts_with(op, "aten::index_fill_")) {
    if (expanded(args, 0)) {
      TORCH_WARN(
          "Use of index_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing this "
          "operation. This also applies to advanced indexing e.g. tensor[mask] = scalar");
    }
  } else if (op == "aten::index_put_" || op == "aten::_index_put_impl_") {
    if (expanded(args, 0)) {
      TORCH_WARN(
          "Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before performing this "
          "operation. This also applies to advanced indexing e.g. tensor[indices] = tensor");
    }
  }
}

// CPU's deprecation warning for each uint8 (byte mask) index of an advanced-indexing op, one per such index.
void warn_uint8_indices(const ArgList& args) {
  std::string_view op = args.op();
  if (!(op == "aten::index.Tensor" || starts_with(op, "aten::index_put") || op == "aten::_index_put_impl_") ||
      args.size() < 2 || args.data()[1].kind != TTPU_ARG_TENSORLIST) {
    return;
  }
  const ttpu_arg& indices = args.data()[1];
  for (int64_t i = 0; i < indices.n; ++i) {
    if (indices.tensors[i].data != 0 && indices.tensors[i].dtype == static_cast<int32_t>(c10::ScalarType::Byte)) {
      TORCH_WARN("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.");
    }
  }
}

}  // namespace

void alert_for_op(const ArgList& args) {
  if (C10_UNLIKELY(at::globalContext().deterministicAlgorithms())) {
    alert_nondeterministic(args);
  }
  warn_expanded_write(args);
  warn_uint8_indices(args);
}

}  // namespace torchtpu
