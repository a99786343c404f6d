#include "allocator.h"

#include <algorithm>
#include <atomic>

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/COW.h>
#include <c10/util/Exception.h>

#include "device_guard.h"
#include "errors.h"
#include "fork.h"
#include "availability.h"
#include "torchtpu.h"

namespace torchtpu {
namespace {

void free_address(void* ctx) {
  // A forked child inherits the parent's tensors but must not call into Go.
  if (ctx != nullptr && !in_forked_child()) {
    ttpu_free(address_of(ctx));
  }
}

// set_stat fills one statistic from the engine's current and peak figures (no pools: every pool
// type reads the same, as the large pool).
void set_stat(c10::CachingAllocator::StatArray& stats, int64_t current, int64_t peak) {
  for (auto type : {c10::CachingAllocator::StatType::AGGREGATE, c10::CachingAllocator::StatType::LARGE_POOL}) {
    auto& s = stats[static_cast<size_t>(type)];
    s.current = current;
    s.peak = std::max(peak, current);
  }
}

// TpuAllocator is the device allocator of PrivateUse1: Go owns the storages and keeps the memory
// figures (bytes of live storages, their peak, the limit); nothing is cached, so reserved memory
// equals allocated memory; emptyCache releases the CPU plugin's cached host blocks.
struct TpuAllocator final : public c10::DeviceAllocator {
  bool initialized() override { return !in_forked_child(); }

  void emptyCache(c10::MempoolId_t mempool_id) override {
    if (!in_forked_child()) ttpu_empty_cache();
  }

  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {}

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    c10::CachingDeviceAllocator::DeviceStats stats;
    if (in_forked_child()) {
      return stats;
    }
    const int64_t bytes = ttpu_memory_allocated();
    const int64_t peak = ttpu_max_memory_allocated();
    const int64_t count = ttpu_live_storages();
    set_stat(stats.allocated_bytes, bytes, peak);
    set_stat(stats.reserved_bytes, bytes, peak);
    set_stat(stats.active_bytes, bytes, peak);
    set_stat(stats.requested_bytes, bytes, peak);
    set_stat(stats.allocation, count, count);
    set_stat(stats.active, count, count);
    set_stat(stats.segment, count, count);
    stats.num_ooms = num_ooms_.load();
    return stats;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override { num_ooms_.store(0); }

  void resetPeakStats(c10::DeviceIndex device) override {
    if (!in_forked_child()) {
      ttpu_reset_peak_memory();
    }
  }

  // getMemoryInfo returns (free, total) under the device memory limit.
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_usable();
    const int64_t limit = ttpu_memory_limit();
    const int64_t used = ttpu_memory_allocated();
    return {static_cast<size_t>(std::max<int64_t>(0, limit - used)), static_cast<size_t>(std::max<int64_t>(0, limit))};
  }

  c10::DataPtr allocate(size_t nbytes) override {
    check_usable();
    auto device = current_device();
    uint64_t addr = 0;
    ErrBuf err;
    ttpu_status st = ttpu_alloc(static_cast<int64_t>(nbytes), device, &addr, err.data(), err.len());
    if (st == TTPU_OOM) {
      num_ooms_.fetch_add(1);
    }
    check(st, err, "ttpu_alloc");
    return wrap_address(addr, device);
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_address; }

  // dest and src are storage addresses (Storage clone); Go copies the bytes.
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    check_usable();
    if (count == 0) {
      return;
    }
    ErrBuf err;
    check(ttpu_storage_copy(address_of(dest), address_of(src), static_cast<int64_t>(count), err.data(), err.len()),
          err, "ttpu_storage_copy");
  }

 private:
  std::atomic<int64_t> num_ooms_{0};
};

TpuAllocator global_allocator;

}  // namespace

c10::Allocator* tpu_allocator() { return &global_allocator; }

c10::DataPtr wrap_address(uint64_t addr, c10::DeviceIndex device) {
  void* p = reinterpret_cast<void*>(addr);
  return c10::DataPtr(p, p, &free_address, c10::Device(c10::DeviceType::PrivateUse1, device));
}

void resize_storage_bytes(c10::StorageImpl* storage, size_t new_nbytes) {
  check_usable();
  TORCH_CHECK(storage->resizable(), "Trying to resize storage that is not resizable");
  size_t old_nbytes = storage->nbytes();
  if (new_nbytes == old_nbytes) {
    return;
  }
  c10::DataPtr fresh;
  if (new_nbytes > 0) {
    c10::DeviceGuard guard(storage->device());
    fresh = global_allocator.allocate(new_nbytes);
  } else {
    fresh = c10::DataPtr(nullptr, storage->device());
  }
  size_t keep = std::min(old_nbytes, new_nbytes);
  if (keep > 0 && storage->data() != nullptr) {
    ErrBuf err;
    check(ttpu_storage_copy(address_of(fresh.get()), address_of(storage->data()), static_cast<int64_t>(keep),
                            err.data(), err.len()),
          err, "ttpu_storage_copy");
  }
  storage->set_data_ptr_noswap(std::move(fresh));
  storage->set_nbytes(new_nbytes);
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &global_allocator);

void materialize_cow(const at::Tensor& t) {
  if (t.defined() && t.has_storage() && c10::impl::cow::is_cow_data_ptr(t.storage().data_ptr())) {
    (void)t.mutable_data_ptr();  // copies the shared bytes into a new storage (copy_data) and drops the share
  }
}

}  // namespace torchtpu
