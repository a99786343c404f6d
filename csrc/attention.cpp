// Attention backend choice for tpu tensors.
//
// scaled_dot_product_attention asks the device's _fused_sdp_choice_stub which kernel to use. Without an answer it
// takes the math path, about twenty ATen ops forward and more backward. On tpu the answer is flash_attention
// where its kernel applies, so SDPA reaches the engine as one _scaled_dot_product_flash_attention_for_cpu op
// (and one backward op), lowered to one fused attention in StableHLO. The conditions follow CPU's own choice
// of that kernel: 4-D dense query, key and value of one floating dtype and head size, no dropout, grouped heads
// only with enable_gqa (the query's heads a multiple of the key's), a 2-D or 4-D mask that does not require grad. Everything else, and any call made with flash disabled
// through torch.nn.attention.sdpa_kernel, stays on the math path. Sizes and strides are read as SymInts: under
// torch.compile the choice runs on fake tensors, where a plain size() specializes a dynamic dimension.
//
// CPU's flash kernel returns its logsumexp, and its backward the gradients, as transposes of [B, L, H(, E)]
// storage, and its output in the layout of empty_like(query); compiled graphs view them with those strides.
// The engine's rules compute the transposed ones in that memory order and the kernels here return them
// transposed back; an output whose query is laid out otherwise is copied into empty_like(query). So tpu's sizes
// and strides equal CPU's.
//
// The inference fast paths of nn.MultiheadAttention and nn.TransformerEncoderLayer call
// _native_multi_head_attention and _transformer_encoder_layer_fwd. The layer's kernel is ATen's device-generic one
// (CUDA shares it): layer norms, linears and the attention op. The attention op goes to the engine's rule with
// need_weights set (a rule cannot return an undefined tensor); the weights are dropped when not asked for.

#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_transformer_encoder_layer_fwd_native.h>
#include <torch/library.h>

#include "fallback.h"
#include "marshal.h"
#include "availability.h"

namespace torchtpu {
namespace {

bool flash_fits(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::optional<at::Tensor>& mask,
                double dropout_p, bool enable_gqa) {
  if (!at::globalContext().userEnabledFlashSDP() || dropout_p != 0.0) {
    return false;
  }
  if (q.is_nested() || k.is_nested() || v.is_nested() || q.dim() != 4 || k.dim() != 4 || v.dim() != 4) {
    return false;
  }
  if (!at::isFloatingType(q.scalar_type()) || k.scalar_type() != q.scalar_type() ||
      v.scalar_type() != q.scalar_type()) {
    return false;
  }
  if (k.sym_size(0) != q.sym_size(0) || v.sym_size(0) != q.sym_size(0) || v.sym_size(1) != k.sym_size(1)) {
    return false;
  }
  // Grouped heads: each key and value head serves heads/key heads consecutive query heads.
  if (k.sym_size(1) != q.sym_size(1) && (!enable_gqa || k.sym_size(1) == 0 || q.sym_size(1) % k.sym_size(1) != 0)) {
    return false;
  }
  if (k.sym_size(3) != q.sym_size(3) || v.sym_size(3) != q.sym_size(3) || k.sym_size(2) != v.sym_size(2)) {
    return false;
  }
  if (q.sym_size(2) == 0 || k.sym_size(2) == 0 || q.sym_size(3) == 0) {
    return false;
  }
  // CPU's choice also wants the last dimension of query, key, value and mask dense in memory (its math path
  // gives a transposed query a contiguous result, where the flash kernel's follows the query's layout).
  const bool dense_last =
      (q.sym_stride(3) == 1 || q.sym_size(3) == 1) && k.sym_stride(3) == 1 && v.sym_stride(3) == 1;
  if (!dense_last || (mask.has_value() && mask->dim() > 0 && mask->sym_stride(-1) != 1)) {
    return false;
  }
  // The flash kernel's autograd formula has no gradient for the mask (derivatives.yaml marks it non-differentiable),
  // so a mask that requires grad (T5's learned relative position bias) takes the math path, as on CPU.
  return !mask.has_value() || ((mask->dim() == 2 || mask->dim() == 4) && !mask->requires_grad());
}

int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p, bool /*is_causal*/,
                         std::optional<double> /*scale*/, bool enable_gqa) {
  const bool flash = flash_fits(query, key, value, attn_mask, dropout_p, enable_gqa);
  return static_cast<int64_t>(flash ? at::SDPBackend::flash_attention : at::SDPBackend::math);
}

// flash_in_cpu_order runs the engine's rule for a flash attention op whose query sits at stack argument
// query_arg, then transposes dimensions 1 and 2 of its results from first_transposed on when the query is 4-D.
template <int query_arg, int first_transposed>
void flash_in_cpu_order(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  check_usable();
  const size_t nargs = op.schema().arguments().size();
  const at::Tensor query = (*stack)[stack->size() - nargs + query_arg].toTensor();
  const bool four = query.dim() == 4;
  const std::string name = op_full_name(op.operator_name());
  TORCH_CHECK(run_op(name, op.schema(), stack), "torchtpu: ", name, " has no engine rule");
  if (!four) {
    return;
  }
  const size_t nret = op.schema().returns().size();
  if (first_transposed > 0 && !query.is_contiguous()) {
    c10::IValue& out = (*stack)[stack->size() - nret];
    at::Tensor like = at::empty_like(query);
    if (like.strides() != out.toTensor().strides()) {
      like.copy_(out.toTensor());
      out = like;
    }
  }
  for (size_t i = stack->size() - nret + first_transposed; i < stack->size(); ++i) {
    if ((*stack)[i].isTensor() && (*stack)[i].toTensor().defined()) {
      (*stack)[i] = (*stack)[i].toTensor().transpose(1, 2);
    }
  }
}

// native_mha runs _native_multi_head_attention through the engine (or the CPU) with need_weights set, and
// returns an undefined tensor for the weights when the caller did not ask for them, as CPU does.
void native_mha(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t nargs = op.schema().arguments().size();
  c10::IValue& need = (*stack)[stack->size() - nargs + 10];
  const bool wanted = need.toBool();
  need = c10::IValue(true);
  tpu_fallback(op, stack);
  if (!wanted) {
    stack->back() = c10::IValue(at::Tensor());
  }
}

}  // namespace
}  // namespace torchtpu

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_native_multi_head_attention", torch::CppFunction::makeFromBoxedFunction<&torchtpu::native_mha>());
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(at::native::transformer_encoder_layer_forward));
  m.impl("_scaled_dot_product_flash_attention_for_cpu",
         torch::CppFunction::makeFromBoxedFunction<&torchtpu::flash_in_cpu_order<0, 1>>());
  m.impl("_scaled_dot_product_flash_attention_for_cpu_backward",
         torch::CppFunction::makeFromBoxedFunction<&torchtpu::flash_in_cpu_order<1, 0>>());
}

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torchtpu::fused_sdp_choice)
}  // namespace at::native
