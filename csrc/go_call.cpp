#include "go_call.h"

#include <atomic>

#include <torch/csrc/autograd/function.h>

#include "allocator.h"
#include "errors.h"
#include "op_alerts.h"
#include "availability.h"

namespace torchtpu {
namespace {

constexpr int32_t kMaxOuts = 1024;

// Whether the last op came from inside an autograd backward pass (-1 before
// the first op). The autograd engine sets the node it is running for the ops
// of a backward pass, so a change marks the start and the end of one.
std::atomic<int> last_phase{-1};

// note_autograd_phase tells the engine when ops start or stop coming from a
// backward pass, so that fused mode launches the forward (or the backward)
// while the host records what follows.
void note_autograd_phase(const ArgList& args) {
  int phase = torch::autograd::get_current_node() ? 1 : 0;
  if (last_phase.load(std::memory_order_relaxed) == phase) {
    return;
  }
  int was = last_phase.exchange(phase, std::memory_order_relaxed);
  if (was == -1 || was == phase) {
    return;
  }
  ErrBuf err;
  check(ttpu_autograd_boundary(phase, err.data(), err.len()), err, args.op().c_str());
}

// The default floating dtype the engine was last told (-1 before the first op).
std::atomic<int> told_default{-1};

// note_default_dtype tells the engine when torch.set_default_dtype changed
// the default floating dtype, which type promotion reads (int32 / int32 is of
// the default dtype, and so is a Python float next to an integer tensor).
void note_default_dtype(const ArgList& args) {
  int d = static_cast<int>(c10::typeMetaToScalarType(c10::get_default_dtype()));
  if (told_default.load(std::memory_order_relaxed) == d) {
    return;
  }
  ErrBuf err;
  check(ttpu_set_default_dtype(d, err.data(), err.len()), err, args.op().c_str());
  told_default.store(d, std::memory_order_relaxed);
}

}  // namespace

ttpu_status call_go(const ArgList& args, std::vector<ttpu_out>& outs, const std::vector<ttpu_layout>* orders) {
  check_usable();
  note_autograd_phase(args);
  note_default_dtype(args);
  alert_for_op(args);
  // Go writes the outputs into a per-thread scratch array made once: a fresh
  // kMaxOuts-entry vector per op (120 KiB, zeroed) cost more than the op.
  thread_local std::vector<ttpu_out> scratch(kMaxOuts);
  int32_t nouts = 0;
  ErrBuf err;
  const ttpu_layout* layouts = orders != nullptr ? orders->data() : nullptr;
  const int32_t nlayouts = orders != nullptr ? static_cast<int32_t>(orders->size()) : 0;
  ttpu_status st = ttpu_op(args.op().c_str(), args.data(), args.size(), args.device(), layouts, nlayouts,
                           scratch.data(), kMaxOuts, &nouts, err.data(), err.len());
  if (st == TTPU_OOM) {
    check(st, err, args.op().c_str());
  }
  if (is_error_status(st)) {
    std::string msg = err.str();
    // The message starts as CPU's does; the op and its arguments follow as context unless the
    // engine already named the op.
    if (msg.find(args.op()) == std::string::npos) {
      msg += " (" + args.op() + " on tpu, arguments: " + args.summary() + ")";
    }
    raise_status(st, msg);
  }
  TORCH_CHECK(nouts >= 0 && nouts <= kMaxOuts, "torchtpu: ", args.op(), " returned ", nouts, " outputs");
  outs.assign(scratch.begin(), scratch.begin() + nouts);
  return st;
}

at::Tensor wrap_out(const ttpu_out& out, c10::DeviceIndex device) {
  TORCH_CHECK(out.ndim >= 0 && out.ndim <= TTPU_MAX_DIMS, "torchtpu: bad output rank ", out.ndim);
  auto dtype = static_cast<c10::ScalarType>(out.dtype);
  if (dtype == c10::kComplexHalf) {
    // A new complex32 result: CPU allocates it with empty, which warns (kernels.cpp's empty does the same).
    TORCH_WARN_ONCE("ComplexHalf support is experimental and many operators don't support it yet.");
  }
  c10::Storage storage(c10::Storage::use_byte_size_t(), static_cast<size_t>(out.nbytes), wrap_address(out.data, device),
                       tpu_allocator(), /*resizable=*/true);
  auto t = at::detail::make_tensor<c10::TensorImpl>(std::move(storage),
                                                    c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                    c10::scalarTypeToTypeMeta(dtype));
  t.unsafeGetTensorImpl()->set_sizes_contiguous(c10::IntArrayRef(out.sizes, out.ndim));
  return t;
}

}  // namespace torchtpu
