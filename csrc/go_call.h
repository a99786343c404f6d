// Calling an op's rule in Go (ttpu_op) and wrapping the storages it creates as tpu tensors.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "arg_list.h"
#include "torchtpu.h"

namespace torchtpu {

// call_go runs ttpu_op on args; throws on TTPU_ERROR; outs receives the new outputs. orders, when not
// empty, gives the memory order of each new output (layout.h).
ttpu_status call_go(const ArgList& args, std::vector<ttpu_out>& outs, const std::vector<ttpu_layout>* orders = nullptr);

// wrap_out makes a new tpu tensor owning the storage Go created for one output.
at::Tensor wrap_out(const ttpu_out& out, c10::DeviceIndex device);

}  // namespace torchtpu
