// The memory layout PyTorch gives an op's new results, so that tpu results carry CPU's strides.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include "torchtpu.h"

namespace torchtpu {

// ResultLayout is one new result's sizes and strides as PyTorch lays it out, and the order of its
// dimensions in memory (outermost first) that the engine writes it in.
struct ResultLayout {
  bool strided = false;  // PyTorch's strides differ from the contiguous ones
  bool dense = false;    // strides are the dense ones of the memory order, found from the engine's sizes
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

// ResultLayouts holds the layouts of an op's new results, in the order ttpu_op returns them, and the
// memory orders to ask the engine for (ndim 0 where a result stays contiguous).
struct ResultLayouts {
  std::vector<ResultLayout> results;
  std::vector<ttpu_layout> orders;
};

// LayoutSource is what finding an op's result layouts needs to know about the op, found once per op.
struct LayoutSource {
  std::optional<c10::OperatorHandle> op;
  int memory_format_arg = -1;  // the index of the op's memory_format argument, or -1
  bool convolution = false;    // a forward convolution: the layout comes from its input and weight
  bool suggested = false;      // a pad or batch norm: the layout is its input's suggested memory format
  bool fresh = false;          // some result is a new tensor (not a written argument)
  bool permuted = false;       // results can be permuted from contiguous arguments (FFTs): always ask meta
};

// layout_source describes op for result_layouts.
LayoutSource layout_source(const c10::OperatorHandle& op);

// result_layouts returns the layouts of the new results of src's op on the arguments on the stack, or
// nullptr when they are all contiguous. The common case (every tpu tensor argument has contiguous
// strides and no memory format is asked for) is decided from the arguments alone; otherwise PyTorch's
// meta kernel answers, run once per op and argument metadata (sizes, strides, dtypes, integers).
std::shared_ptr<const ResultLayouts> result_layouts(const LayoutSource& src, const torch::jit::Stack& stack);

// out_layouts returns the layouts of the functional twin of src's out= op (exp for exp.out, add.Tensor
// for add.out) on the same inputs, in the order of its results, which are the out= tensors' order; nullptr
// when they are contiguous or the op has no such twin. CPU's kernels give a resized out= tensor of a
// TensorIterator op these strides (its inputs' memory order), as its functional twin's result has.
std::shared_ptr<const ResultLayouts> out_layouts(const LayoutSource& src, const torch::jit::Stack& stack);

// strides_in returns the strides a result of the given sizes has in layout k of ls, or nothing when the
// layout does not fit those sizes.
std::vector<int64_t> strides_in(const ResultLayouts& ls, size_t k, c10::IntArrayRef sizes);

// apply_layout gives t, new result k of op that the engine laid out in memory as l asks, l's sizes and
// strides.
void apply_layout(at::Tensor& t, const ttpu_out& out, const ResultLayouts& ls, const std::string& op, size_t k);

}  // namespace torchtpu
