// The tpu allocator: storages are opaque addresses owned by the Go engine, never dereferenced.
#pragma once

#include <cstdint>

#include <c10/core/Allocator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/StorageImpl.h>

namespace torchtpu {

// tpu_allocator is the c10::Allocator registered for PrivateUse1.
c10::Allocator* tpu_allocator();

// wrap_address makes a DataPtr owning a storage address Go created (freed with ttpu_free).
c10::DataPtr wrap_address(uint64_t addr, c10::DeviceIndex device);

// address_of is the opaque address of a storage's data, as Go knows it.
inline uint64_t address_of(const void* p) { return reinterpret_cast<uint64_t>(p); }

// resize_storage_bytes grows or shrinks a tpu storage, keeping its leading bytes.
void resize_storage_bytes(c10::StorageImpl* storage, size_t new_nbytes);

// materialize_cow gives t a storage of its own when it shares one lazily with a copy-on-write clone
// (Tensor._lazy_clone), as a CPU kernel's mutable_data_ptr() does before writing; call it for every tensor an op
// writes, before its address goes to the engine.
void materialize_cow(const at::Tensor& t);

}  // namespace torchtpu
