// The tpu random generator: a CPU-style mt19937 generator tagged with a tpu device.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

namespace torchtpu {

struct TpuGeneratorImpl : public at::CPUGeneratorImpl {
  explicit TpuGeneratorImpl(c10::DeviceIndex device_index, uint64_t seed = c10::default_rng_seed_val);
  ~TpuGeneratorImpl() override = default;
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  TpuGeneratorImpl* clone_impl() const override;
};

// default_generator is the process-wide generator of a tpu device (-1: the current one).
const at::Generator& default_generator(c10::DeviceIndex device_index = -1);

// new_generator makes a fresh generator for a tpu device (-1: the current one).
at::Generator new_generator(c10::DeviceIndex device_index = -1);

// seed_for_op draws a 64-bit seed for one random op from gen (the default generator when undefined).
int64_t seed_for_op(const std::optional<at::Generator>& gen, c10::DeviceIndex device_index);

}  // namespace torchtpu
