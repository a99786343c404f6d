// Nested tensors whose buffer lives on a tpu: generic kernels, and the CPU for the rest.
#pragma once

namespace torchtpu {

// register_nested_kernels gives every aten op with a NestedTensorCPU kernel, views aside, a
// NestedTensorPrivateUse1 kernel that runs it on the CPU. Ops that also have a composite kernel (matmul,
// linear) would otherwise run the dense composite on the nested tensor; the others reach the same kernel
// through the key's fallback.
void register_nested_kernels();

}  // namespace torchtpu
