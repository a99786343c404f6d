// torch.ops.torchtpu.*: the shim functions the Python package calls (RNG state, fork state).
#pragma once

namespace torchtpu {

// The operators are registered statically under the torchtpu namespace:
//   manual_seed(int device, int seed) -> ()      device -1: every device
//   initial_seed(int device) -> int
//   seed(int device) -> int                      reseeds non-deterministically, returns the seed
//   get_rng_state(int device) -> Tensor          a CPU uint8 tensor
//   set_rng_state(int device, Tensor state) -> ()
//   in_bad_fork() -> bool
//   current_device() -> int, set_device(int index) -> ()   this thread's current tpu device
//   register_rule_kernels() -> ()               see fallback.h
//   set_init_error(str message) -> ()           device use raises message from then on ("" clears)

}  // namespace torchtpu
