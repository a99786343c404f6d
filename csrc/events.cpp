#include "events.h"

#include <chrono>

#include <c10/util/Exception.h>

#include "fork.h"
#include "torchtpu.h"

namespace torchtpu {
namespace {

struct TpuEvent {
  bool recorded = false;
  bool timing = false;
  // done is true once the work issued before the last record is known to have finished.
  bool done = true;
  c10::DeviceIndex device = 0;
  std::chrono::steady_clock::time_point stamp;
};

TpuEvent* as_event(void* e) { return static_cast<TpuEvent*>(e); }

}  // namespace

void synchronize_device(c10::DeviceIndex device) {
  check_not_forked();
  char err[4096] = {0};
  if (ttpu_synchronize(err, sizeof(err)) != TTPU_OK) {
    TORCH_CHECK(false, err);
  }
}

void record_event(void** event, const c10::Stream& stream, c10::DeviceIndex device, c10::EventFlag flag) {
  TORCH_CHECK(device == -1 || device == stream.device_index(), "torchtpu: event device index ",
              static_cast<int>(device), " does not match the recording stream's device index ",
              static_cast<int>(stream.device_index()));
  if (*event == nullptr) {
    auto* e = new TpuEvent();
    e->timing = flag == c10::EventFlag::BACKEND_DEFAULT;
    *event = e;
  }
  auto* e = as_event(*event);
  e->device = stream.device_index();
  e->recorded = true;
  e->done = false;
  if (e->timing) {
    // The stamp must mark the end of the work issued so far: wait for it first.
    synchronize_device(e->device);
    e->done = true;
    e->stamp = std::chrono::steady_clock::now();
  }
}

bool query_event(void* event) {
  auto* e = as_event(event);
  if (e == nullptr || e->done) {
    return true;
  }
  // The engine does not report progress per event: finishing the device's work answers exactly.
  synchronize_device(e->device);
  e->done = true;
  return true;
}

void synchronize_event(void* event) { query_event(event); }

double elapsed_ms(void* start, void* end) {
  auto* a = as_event(start);
  auto* b = as_event(end);
  TORCH_CHECK(a != nullptr && b != nullptr && a->recorded && b->recorded,
              "Both events must be recorded before calculating elapsed time.");
  TORCH_CHECK(a->timing && b->timing, "Both events must be created with argument 'enable_timing=True'.");
  return std::chrono::duration<double, std::milli>(b->stamp - a->stamp).count();
}

void destroy_event(void* event) noexcept { delete as_event(event); }

}  // namespace torchtpu
