#include "generator.h"

#include <array>
#include <mutex>

#include <c10/util/Exception.h>

#include "device_guard.h"

namespace torchtpu {
namespace {

constexpr int kMaxDevices = 64;

c10::DeviceIndex checked_index(c10::DeviceIndex device_index) {
  auto idx = resolve_index(device_index);
  auto n = std::max<int>(1, device_count());
  TORCH_CHECK(idx >= 0 && idx < n && idx < kMaxDevices, "torchtpu: invalid device index ", static_cast<int>(idx),
              " for a generator (", n, " tpu devices)");
  return idx;
}

}  // namespace

TpuGeneratorImpl::TpuGeneratorImpl(c10::DeviceIndex device_index, uint64_t seed) : at::CPUGeneratorImpl(seed) {
  device_ = c10::Device(c10::DeviceType::PrivateUse1, device_index);
  key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
}

TpuGeneratorImpl* TpuGeneratorImpl::clone_impl() const {
  auto* gen = new TpuGeneratorImpl(device_.index());
  gen->set_engine(const_cast<TpuGeneratorImpl*>(this)->engine());
  gen->set_next_float_normal_sample(const_cast<TpuGeneratorImpl*>(this)->next_float_normal_sample());
  gen->set_next_double_normal_sample(const_cast<TpuGeneratorImpl*>(this)->next_double_normal_sample());
  return gen;
}

const at::Generator& default_generator(c10::DeviceIndex device_index) {
  static std::array<at::Generator, kMaxDevices> generators;
  static std::array<std::once_flag, kMaxDevices> created;
  auto idx = checked_index(device_index);
  std::call_once(created[idx], [idx] { generators[idx] = at::make_generator<TpuGeneratorImpl>(idx); });
  return generators[idx];
}

at::Generator new_generator(c10::DeviceIndex device_index) {
  return at::make_generator<TpuGeneratorImpl>(checked_index(device_index));
}

int64_t seed_for_op(const std::optional<at::Generator>& gen, c10::DeviceIndex device_index) {
  at::Generator g = (gen.has_value() && gen->defined()) ? *gen : default_generator(device_index);
  auto* impl = at::check_generator<TpuGeneratorImpl>(g);
  std::lock_guard<std::mutex> lock(g.mutex());
  return static_cast<int64_t>(impl->random64());
}

}  // namespace torchtpu
