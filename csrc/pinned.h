// Pinned host memory: page-locked (mlock) host buffers for pin_memory() and DataLoader(pin_memory=True).
#pragma once

#include <c10/core/Allocator.h>

namespace torchtpu {

// pinned_allocator allocates page-aligned host memory locked into RAM.
c10::Allocator* pinned_allocator();

// is_pinned is true when p points into a live pinned allocation.
bool is_pinned(const void* p);

}  // namespace torchtpu
