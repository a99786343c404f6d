#include "torchtpu_ops.h"

#include <mutex>

#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include "device_guard.h"
#include "events.h"
#include "fallback.h"
#include "nested.h"
#include "fork.h"
#include "generator.h"
#include "availability.h"

namespace torchtpu {
namespace {

// each_device runs fn on one device's default generator, or every device's when device is -1.
template <typename Fn>
void each_device(int64_t device, Fn fn) {
  if (device >= 0) {
    at::Generator gen = default_generator(static_cast<c10::DeviceIndex>(device));
    fn(gen);
    return;
  }
  auto n = std::max<int>(1, device_count());
  for (int i = 0; i < n; ++i) {
    at::Generator gen = default_generator(static_cast<c10::DeviceIndex>(i));
    fn(gen);
  }
}

void manual_seed(int64_t device, int64_t seed) {
  each_device(device, [seed](at::Generator& gen) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_current_seed(static_cast<uint64_t>(seed));
  });
}

int64_t initial_seed(int64_t device) {
  at::Generator gen = default_generator(static_cast<c10::DeviceIndex>(device));
  return static_cast<int64_t>(gen.current_seed());
}

int64_t seed(int64_t device) {
  at::Generator gen = default_generator(static_cast<c10::DeviceIndex>(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  return static_cast<int64_t>(gen.seed());
}

at::Tensor get_rng_state(int64_t device) {
  at::Generator gen = default_generator(static_cast<c10::DeviceIndex>(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_rng_state(int64_t device, const at::Tensor& state) {
  at::Generator gen = default_generator(static_cast<c10::DeviceIndex>(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

bool in_bad_fork() { return in_forked_child(); }

int64_t current_tpu_device() { return current_device(); }

void set_tpu_device(int64_t index) { set_device(static_cast<c10::DeviceIndex>(index)); }

void record_init_error(std::string message) { set_init_error(message); }

void install_rule_kernels() {
  register_rule_kernels();
  register_nested_kernels();
}

// event_elapsed_ms serves torch.tpu.Event.elapsed_time from the events' ids (their addresses).
double event_elapsed_ms(int64_t start, int64_t end) {
  return elapsed_ms(reinterpret_cast<void*>(start), reinterpret_cast<void*>(end));
}

}  // namespace

TORCH_LIBRARY(torchtpu, m) {
  m.def("manual_seed(int device, int seed) -> ()", &manual_seed);
  m.def("initial_seed(int device) -> int", &initial_seed);
  m.def("seed(int device) -> int", &seed);
  m.def("get_rng_state(int device) -> Tensor", &get_rng_state);
  m.def("set_rng_state(int device, Tensor state) -> ()", &set_rng_state);
  m.def("in_bad_fork() -> bool", &in_bad_fork);
  m.def("current_device() -> int", &current_tpu_device);
  m.def("set_device(int index) -> ()", &set_tpu_device);
  m.def("set_init_error(str message) -> ()", &record_init_error);
  m.def("register_rule_kernels() -> ()", &install_rule_kernels);
  m.def("event_elapsed_ms(int start, int end) -> float", &event_elapsed_ms);
}

}  // namespace torchtpu
