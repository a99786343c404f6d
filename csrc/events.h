// Events of the tpu device. A device runs its work in issue order, so waiting on an event needs
// nothing; an event is complete once the device has finished the work issued before it.
// Timing events take their time stamp when that work has finished (record waits for it).
#pragma once

#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace torchtpu {

// record_event creates *event when null and records it on stream.
void record_event(void** event, const c10::Stream& stream, c10::DeviceIndex device, c10::EventFlag flag);

// query_event is true when the event was never recorded or the work before it has finished.
bool query_event(void* event);

// synchronize_event waits for the work issued before the event.
void synchronize_event(void* event);

// elapsed_ms is the time in milliseconds between two recorded timing events.
double elapsed_ms(void* start, void* end);

// destroy_event frees an event.
void destroy_event(void* event) noexcept;

// synchronize_device flushes the device's pending work and waits for it.
void synchronize_device(c10::DeviceIndex device);

}  // namespace torchtpu
