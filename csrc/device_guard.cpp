#include "device_guard.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include "events.h"
#include "fork.h"
#include "program.h"
#include "streams.h"
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
  TORCH_CHECK(index >= 0 && (index < n || (n == 0 && index == 0)), "torchtpu: invalid device index ", static_cast<int>(index),
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

  c10::Stream getStream(c10::Device d) const override { return current_stream(resolve_index(d.index())); }

  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kType, resolve_index(d.index())));
  }

  c10::Stream getNewStream(c10::Device d, int priority) const override { return new_stream(resolve_index(d.index())); }

  c10::Stream getStreamFromGlobalPool(c10::Device d, bool isHighPriority) const override {
    return new_stream(resolve_index(d.index()));
  }

  c10::Stream exchangeStream(c10::Stream s) const override { return exchange_stream(s); }

  c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

  // Every stream of a device shares its ordered queue: a stream is idle when the device is.
  bool queryStream(const c10::Stream& stream) const override {
    synchronize_device(stream.device_index());
    return true;
  }

  bool isStreamCapturing(const c10::Stream& stream) const override { return graph_capturing(); }

  void synchronizeStream(const c10::Stream& stream) const override { synchronize_device(stream.device_index()); }

  void synchronizeDevice(const c10::DeviceIndex device_index) const override { synchronize_device(device_index); }

  void destroyEvent(void* event, const c10::DeviceIndex device_index) const noexcept override {
    destroy_event(event);
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    record_event(event, stream, device_index, flag);
  }

  // Work on any stream of the device runs after the work issued before the event: nothing to wait for.
  void block(void* event, const c10::Stream& stream) const override {}

  bool queryEvent(void* event) const override { return query_event(event); }

  void synchronizeEvent(void* event) const override { synchronize_event(event); }

  double elapsedTime(void* event1, void* event2, const c10::DeviceIndex device_index) const override {
    return elapsed_ms(event1, event2);
  }

  void recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) const override {}
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

}  // namespace torchtpu
