#include "allocator.h"

#include <algorithm>

#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include "device_guard.h"
#include "errors.h"
#include "fork.h"
#include "usable.h"
#include "torchtpu.h"

namespace torchtpu {
namespace {

void free_address(void* ctx) {
  // A forked child inherits the parent's tensors but must not call into Go.
  if (ctx != nullptr && !in_forked_child()) {
    ttpu_free(address_of(ctx));
  }
}

struct TpuAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    check_usable();
    auto device = current_device();
    uint64_t addr = 0;
    ErrBuf err;
    check(ttpu_alloc(static_cast<int64_t>(nbytes), device, &addr, err.data(), err.len()), err, "ttpu_alloc");
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

}  // namespace torchtpu
