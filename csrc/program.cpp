#include "program.h"

#include <atomic>
#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include "device_guard.h"
#include "errors.h"
#include "generator.h"
#include "go_call.h"
#include "marshal.h"

namespace torchtpu {
namespace {

// capturing is set while a torch.tpu.graph capture records (the engine allows one at a time).
std::atomic<bool> capturing{false};

std::vector<ttpu_tensor> describe_all(const std::vector<at::Tensor>& ts, const char* what) {
  std::vector<ttpu_tensor> out;
  out.reserve(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    TORCH_CHECK(ts[i].defined() && ts[i].device().type() == c10::DeviceType::PrivateUse1,
                "torchtpu: compiled graph ", what, " ", i, " is not a tpu tensor");
    out.push_back(describe(ts[i]));
  }
  return out;
}

c10::DeviceIndex device_of(const std::vector<at::Tensor>& ts) {
  for (const auto& t : ts) {
    if (t.defined() && t.device().type() == c10::DeviceType::PrivateUse1 && t.device().has_index()) {
      return t.device().index();
    }
  }
  return current_device();
}

void capture_begin(const std::vector<at::Tensor>& inputs, const std::string& name) {
  auto descs = describe_all(inputs, "input");
  ErrBuf err;
  check(ttpu_capture_begin(name.c_str(), descs.data(), static_cast<int32_t>(descs.size()), err.data(), err.len()),
        err, "capture_begin");
}

void capture_abort() {
  capturing = false;
  ErrBuf err;
  check(ttpu_capture_abort(err.data(), err.len()), err, "capture_abort");
}

std::tuple<int64_t, std::vector<int64_t>, std::vector<int64_t>, std::string> capture_end(
    const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) {
  auto ins = describe_all(inputs, "input");
  auto outs = describe_all(outputs, "output");
  std::vector<int32_t> kinds(outs.size()), indices(outs.size());
  int64_t handle = 0;
  ErrBuf err;
  ttpu_status s = ttpu_capture_end(ins.data(), static_cast<int32_t>(ins.size()), outs.data(),
                                   static_cast<int32_t>(outs.size()), &handle, kinds.data(), indices.data(),
                                   err.data(), err.len());
  if (s == TTPU_NOT_CAPTURED) {
    return {0, {}, {}, err.str()};
  }
  check(s, err, "capture_end");
  return {handle, std::vector<int64_t>(kinds.begin(), kinds.end()),
          std::vector<int64_t>(indices.begin(), indices.end()), std::string()};
}

std::tuple<std::vector<at::Tensor>, std::string> run_program(int64_t handle, const std::vector<at::Tensor>& inputs) {
  auto ins = describe_all(inputs, "input");
  c10::DeviceIndex device = device_of(inputs);
  std::vector<int64_t> seeds(static_cast<size_t>(ttpu_program_seeds(handle)));
  for (auto& s : seeds) {
    s = seed_for_op(std::nullopt, device);
  }
  std::vector<ttpu_out> outs(static_cast<size_t>(ttpu_program_outputs(handle)));
  int32_t n = 0;
  ErrBuf err;
  ttpu_status s = ttpu_program_run(handle, ins.data(), static_cast<int32_t>(ins.size()), seeds.data(),
                                   static_cast<int32_t>(seeds.size()), outs.data(), static_cast<int32_t>(outs.size()),
                                   &n, err.data(), err.len());
  if (s == TTPU_MISMATCH) {
    return {std::vector<at::Tensor>{}, err.str()};
  }
  check(s, err, "run_program");
  std::vector<at::Tensor> results;
  results.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    results.push_back(wrap_out(outs[static_cast<size_t>(i)], device));
  }
  return {std::move(results), std::string()};
}

// graph_replay replays graph program handle (no positional inputs, no fresh results) with seeds from
// device's generator, and returns the mismatch message, empty when it ran.
std::string graph_replay(int64_t handle, int64_t device) {
  std::vector<int64_t> seeds(static_cast<size_t>(ttpu_program_seeds(handle)));
  for (auto& s : seeds) {
    s = seed_for_op(std::nullopt, static_cast<c10::DeviceIndex>(device));
  }
  int32_t n = 0;
  ErrBuf err;
  ttpu_status s = ttpu_program_run(handle, nullptr, 0, seeds.data(), static_cast<int32_t>(seeds.size()), nullptr, 0,
                                   &n, err.data(), err.len());
  if (s == TTPU_MISMATCH) {
    return err.str();
  }
  check(s, err, "graph_replay");
  return std::string();
}

void graph_capture_begin() {
  ErrBuf err;
  check(ttpu_graph_capture_begin(err.data(), err.len()), err, "graph_capture_begin");
  capturing = true;
}

int64_t graph_capture_end() {
  int64_t handle = 0;
  ErrBuf err;
  capturing = false;
  check(ttpu_graph_capture_end(&handle, err.data(), err.len()), err, "graph_capture_end");
  return handle;
}

std::string program_text(int64_t handle) {
  const int64_t n = ttpu_program_text(handle, nullptr, 0);
  TORCH_CHECK(n >= 0, "torchtpu: no compiled program ", handle);
  std::string text(static_cast<size_t>(n), '\0');
  ttpu_program_text(handle, text.data(), n);
  return text;
}

}  // namespace

bool graph_capturing() { return capturing; }

TORCH_LIBRARY_FRAGMENT(torchtpu, m) {
  m.def("capture_begin(Tensor[] inputs, str name=\"\") -> ()", &capture_begin);
  m.def("capture_abort() -> ()", &capture_abort);
  m.def("capture_end(Tensor[] inputs, Tensor[] outputs) -> (int, int[], int[], str)", &capture_end);
  m.def("graph_capture_begin() -> ()", &graph_capture_begin);
  m.def("graph_capture_end() -> int", &graph_capture_end);
  m.def("run_program(int handle, Tensor[] inputs) -> (Tensor[], str)", &run_program);
  m.def("graph_replay(int handle, int device) -> str", &graph_replay);
  m.def("program_text(int handle) -> str", &program_text);
}

}  // namespace torchtpu
