// The arguments of one ttpu_op call: PyTorch values as ttpu_arg structs, and the buffers they point into.
#pragma once

#include <list>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "torchtpu.h"

namespace torchtpu {

// describe fills the view descriptor of a tpu tensor (storage address, offset, sizes, strides, dtype).
ttpu_tensor describe(const at::Tensor& t);

// ArgList is the ttpu_arg array of one call; it owns every buffer the args point into.
class ArgList {
 public:
  explicit ArgList(std::string op) : op_(std::move(op)) { args_.reserve(8); }

  void add_none();
  void add_tensor(const at::Tensor& t);
  void add_tensor_list(const std::vector<std::optional<at::Tensor>>& ts);
  void add_int(int64_t v);
  void add_double(double v);
  void add_bool(bool v);
  void add_scalar(const c10::Scalar& s);
  void add_int_list(std::vector<int64_t> v);
  void add_double_list(std::vector<double> v);
  void add_bool_list(const std::vector<bool>& v);
  void add_string(std::string s);

  // device is the tpu device of the tensor arguments (the current device when there is none).
  c10::DeviceIndex device() const;
  // keep holds a tensor alive as long as the args (host copies, moved indices).
  void keep(at::Tensor t) { keep_.push_back(std::move(t)); }
  // note_device records a tpu device named by a Device argument.
  void note_device(c10::DeviceIndex index);

  const ttpu_arg* data() const { return args_.data(); }
  int32_t size() const { return static_cast<int32_t>(args_.size()); }
  const std::string& op() const { return op_; }
  // summary renders the arguments for error messages: float32[2, 3], 1, None, ...
  std::string summary() const;

 private:
  ttpu_tensor tensor_desc(const at::Tensor& t);
  ttpu_arg& push(int32_t kind);

  std::string op_;
  std::vector<ttpu_arg> args_;
  // The buffers args_ points into. Lists keep their elements in place as they grow and, unlike
  // deques, allocate nothing while empty: most ops fill one or two of them, or none.
  std::list<std::vector<ttpu_tensor>> tensors_;
  std::list<std::vector<int64_t>> ints_;
  std::list<std::vector<double>> doubles_;
  std::list<std::string> strings_;
  std::vector<at::Tensor> keep_;
  std::optional<c10::DeviceIndex> device_;
  std::optional<c10::DeviceIndex> named_device_;
};

}  // namespace torchtpu
