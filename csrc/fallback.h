// The boxed fallback: every op without an explicit kernel goes to Go, or to the CPU when Go has no rule.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torchtpu {

// op_full_name is "ns::name.overload" ("ns::name" when the overload is empty).
std::string op_full_name(const c10::OperatorName& name);

// returns_view reports whether an op returns a view of an argument (an alias it does not write).
bool returns_view(const c10::FunctionSchema& schema);

// tpu_fallback runs one op for the PrivateUse1 key.
void tpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// CpuRunner runs op on the stack's arguments on the CPU and leaves device results on the stack.
using CpuRunner = void (*)(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// run_on_cpu runs op on the CPU: its tensors are copied to the host, its results back to the device
// (in-place and out= arguments are written back). name is the op as warnings and errors spell it. run
// moves the tensors and calls the CPU kernel; nullptr is PyTorch's cpu_fallback, for dense tensors.
void run_on_cpu(const c10::OperatorHandle& op, const std::string& name, torch::jit::Stack* stack,
                CpuRunner run = nullptr);

// register_rule_kernels installs tpu_fallback as the PrivateUse1 kernel of every aten op Go has a
// rule for, so that ops PyTorch would otherwise decompose for any backend (structured functional
// and in-place variants, which run a meta function and then call the out= variant) reach Go whole.
// Views and CompositeImplicitAutograd ops are left alone (their autograd comes from the decomposition).
void register_rule_kernels();

}  // namespace torchtpu
