#include "device_guard.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include "fork.h"
#include "torchtpu.h"

namespace torchtpu {
namespace {

thread_local c10::DeviceIndex tls_current_device = 0;

}  // namespace

c10::DeviceIndex device_count() noexcept {
  if (in_forked_child()) {
    return 0;
  }
  return static_cast<c10::DeviceIndex>(ttpu_device_count());
}

c10::DeviceIndex current_device() { return tls_current_device; }

void set_device(c10::DeviceIndex index) {
  check_not_forked();
  auto n = device_count();
  TORCH_CHECK(index >= 0 && (index < n || (n == 0 && index == 0)), "torchtpu: invalid device index ", index,
              " (", static_cast<int>(n), " tpu devices)");
  tls_current_device = index;
}

c10::DeviceIndex exchange_device(c10::DeviceIndex index) {
  auto prev = tls_current_device;
  if (index != prev) {
    set_device(index);
  }
  return prev;
}

c10::DeviceIndex resolve_index(c10::DeviceIndex index) { return index < 0 ? tls_current_device : index; }

namespace {

struct TpuGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return kType; }

  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == kType);
    return c10::Device(kType, exchange_device(resolve_index(d.index())));
  }

  c10::Device getDevice() const override { return c10::Device(kType, current_device()); }

  void setDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == kType);
    set_device(resolve_index(d.index()));
  }

  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0) {
      tls_current_device = d.index();
    }
  }

  c10::Stream getStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kType, resolve_index(d.index())));
  }

  c10::Stream getDefaultStream(c10::Device d) const override { return getStream(d); }

  c10::Stream getNewStream(c10::Device d, int priority) const override { return getStream(d); }

  c10::Stream getStreamFromGlobalPool(c10::Device d, bool isHighPriority) const override { return getStream(d); }

  c10::Stream exchangeStream(c10::Stream s) const override { return getStream(s.device()); }

  c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

  bool queryStream(const c10::Stream& stream) const override { return true; }

  void synchronizeStream(const c10::Stream& stream) const override { synchronizeDevice(stream.device_index()); }

  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    check_not_forked();
    char err[4096] = {0};
    if (ttpu_synchronize(err, sizeof(err)) != TTPU_OK) {
      TORCH_CHECK(false, err);
    }
  }

  // Events are trivial: work on the single stream of a device is ordered.
  void destroyEvent(void* event, const c10::DeviceIndex device_index) const noexcept override {}

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {}

  void block(void* event, const c10::Stream& stream) const override {}

  bool queryEvent(void* event) const override { return true; }

  void synchronizeEvent(void* event) const override {}

  void recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) const override {}
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

}  // namespace torchtpu
