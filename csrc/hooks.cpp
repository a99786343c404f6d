#include "hooks.h"

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/util/Exception.h>

#include "allocator.h"
#include "device_guard.h"
#include "fork.h"
#include "generator.h"
#include "pinned.h"

namespace torchtpu {
namespace {

struct TpuHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }

  bool isAvailable() const override { return device_count() > 0; }

  bool hasPrimaryContext(c10::DeviceIndex device_index) const override { return device_count() > 0; }

  void init() const override { check_not_forked(); }

  c10::DeviceIndex deviceCount() const override { return device_count(); }

  void setCurrentDevice(c10::DeviceIndex device) const override { set_device(resolve_index(device)); }

  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }

  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    return exchange_device(resolve_index(device));
  }

  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    if (device < 0 || device >= device_count()) {
      return current_device();
    }
    return exchange_device(device);
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return default_generator(device_index);
  }

  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override { return new_generator(device_index); }

  // Storage addresses do not say which device they belong to; one device is addressed per process today.
  at::Device getDeviceFromPtr(void* data) const override { return at::Device(c10::DeviceType::PrivateUse1, 0); }

  bool isPinnedPtr(const void* data) const override { return is_pinned(data); }

  at::Allocator* getPinnedMemoryAllocator() const override { return pinned_allocator(); }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    resize_storage_bytes(storage.unsafeGetStorageImpl(), newsize);
  }
};

bool register_hooks() {
  static TpuHooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
  return true;
}

const bool registered = register_hooks();

}  // namespace

bool hooks_registered() { return registered; }

}  // namespace torchtpu
