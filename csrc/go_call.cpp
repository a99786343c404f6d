#include "go_call.h"

#include <atomic>

#include <torch/csrc/autograd/function.h>

#include "allocator.h"
#include "errors.h"
#include "usable.h"

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

}  // namespace

ttpu_status call_go(const ArgList& args, std::vector<ttpu_out>& outs, const std::vector<ttpu_layout>* orders) {
  check_usable();
  note_autograd_phase(args);
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
  if (st == TTPU_ERROR) {
    std::string msg = err.str();
    // Name the op and its arguments unless the engine already did.
    TORCH_CHECK(msg.rfind(args.op(), 0) == 0, args.op(), "(", args.summary(), "): ", msg);
    TORCH_CHECK(false, msg);
  }
  TORCH_CHECK(nouts >= 0 && nouts <= kMaxOuts, "torchtpu: ", args.op(), " returned ", nouts, " outputs");
  outs.assign(scratch.begin(), scratch.begin() + nouts);
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

}  // namespace torchtpu
