// Streams of the tpu device: ids handed out per device and a current stream per thread and device.
// All streams of a device feed one ordered queue (the engine runs a device's work in the order it
// was issued), so work on any stream never overtakes work issued earlier on another.
#pragma once

#include <c10/core/Stream.h>

namespace torchtpu {

// current_stream is this thread's current stream on device (the default stream, id 0, at first).
c10::Stream current_stream(c10::DeviceIndex device);

// new_stream returns a stream with a fresh id on device.
c10::Stream new_stream(c10::DeviceIndex device);

// exchange_stream makes s the current stream of its device on this thread and returns the previous one.
c10::Stream exchange_stream(c10::Stream s);

}  // namespace torchtpu
