// Marshalling a boxed op call (schema and stack) into a ttpu_op call and its results back onto the stack.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/function_schema.h>
#include <ATen/core/stack.h>

#include "arg_list.h"
#include "layout.h"

namespace torchtpu {

// supported_by_go reports whether every return of schema can be built from ttpu_outs.
bool supported_by_go(const c10::FunctionSchema& schema);

// Seeds are the seeds one op call draws from its generators, kept so that marshalling the call again (after
// resizing its out= arguments) passes the same ones: randperm(5, out=empty) equals randperm(5) from one state.
struct Seeds {
  std::vector<int64_t> drawn;
  size_t next = 0;
};

// marshal_arguments appends the schema arguments found on the stack (the last n entries) to args, and with
// seeded a seed from the device's default generator after them (ttpu_has_rule says which rules take one).
// With seeds, a call marshalled again reuses the seeds its first marshalling drew.
void marshal_arguments(const c10::FunctionSchema& schema, const torch::jit::Stack& stack, ArgList& args,
                       bool seeded = false, Seeds* seeds = nullptr);

// run_op calls ttpu_op for op on the stack's arguments, resizing out= arguments when Go asks,
// and replaces the arguments with the results. Returns false (stack untouched) on TTPU_NO_RULE.
// With layout, new results carry the strides PyTorch gives them (layout.h); without, they are contiguous.
// With seeded, the rule gets a trailing seed (marshal_arguments).
bool run_op(const std::string& name, const c10::FunctionSchema& schema, torch::jit::Stack* stack,
            const LayoutSource* layout = nullptr, bool seeded = false);

}  // namespace torchtpu
