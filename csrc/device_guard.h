// The tpu device guard: a current device and stream per thread; streams and events (streams.h, events.h).
#pragma once

#include <c10/core/Device.h>

namespace torchtpu {

// device_count is the number of addressable tpu devices (0 before init or in a forked child).
c10::DeviceIndex device_count() noexcept;

// current_device is this thread's current tpu device index (0 by default).
c10::DeviceIndex current_device();

// set_device checks index against device_count and makes it this thread's current device.
void set_device(c10::DeviceIndex index);

// exchange_device sets index and returns the previous current device.
c10::DeviceIndex exchange_device(c10::DeviceIndex index);

// resolve_index maps -1 to the current device.
c10::DeviceIndex resolve_index(c10::DeviceIndex index);

}  // namespace torchtpu
