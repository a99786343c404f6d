#include "streams.h"

#include <array>
#include <atomic>

#include <c10/util/Exception.h>

namespace torchtpu {
namespace {

constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
constexpr size_t kMaxDevices = 64;

// Stream ids grow from 1 (0 is the default stream); they only name streams, all of which share
// their device's queue.
std::atomic<c10::StreamId> next_id{1};

thread_local std::array<c10::StreamId, kMaxDevices> tls_current{};

size_t slot(c10::DeviceIndex device) {
  TORCH_CHECK(device >= 0 && static_cast<size_t>(device) < kMaxDevices, "torchtpu: invalid device index ",
              static_cast<int>(device), " for a stream");
  return static_cast<size_t>(device);
}

}  // namespace

c10::Stream current_stream(c10::DeviceIndex device) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kType, device), tls_current[slot(device)]);
}

c10::Stream new_stream(c10::DeviceIndex device) {
  slot(device);
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kType, device), next_id.fetch_add(1));
}

c10::Stream exchange_stream(c10::Stream s) {
  auto prev = current_stream(s.device_index());
  tls_current[slot(s.device_index())] = s.id();
  return prev;
}

}  // namespace torchtpu

#include <ATen/core/Tensor.h>
#include <torch/library.h>

namespace torchtpu {
namespace {

// record_stream has nothing to do: a storage freed while a stream still uses it stays alive in the
// engine until the work that reads it has run, whichever stream issued that work.
void record_stream(at::Tensor& self, c10::Stream s) {
  TORCH_CHECK(s.device_type() == c10::DeviceType::PrivateUse1, "record_stream: expected a tpu stream, got a ",
              c10::DeviceTypeName(s.device_type()), " stream");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", TORCH_FN(record_stream)); }

}  // namespace torchtpu
