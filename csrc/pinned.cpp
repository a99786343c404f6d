#include "pinned.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include <c10/util/Exception.h>

namespace torchtpu {
namespace {

std::mutex mu;
// live maps each pinned block's start to its size, for is_pinned on interior pointers.
std::map<uintptr_t, size_t> live;

void free_pinned(void* p) {
  if (p == nullptr) {
    return;
  }
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = live.find(reinterpret_cast<uintptr_t>(p));
    if (it != live.end()) {
      n = it->second;
      live.erase(it);
    }
  }
  if (n > 0) {
    munlock(p, n);
  }
  std::free(p);
}

struct PinnedAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (nbytes == 0) {
      return c10::DataPtr(nullptr, nullptr, &free_pinned, cpu);
    }
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t rounded = (nbytes + page - 1) / page * page;
    void* p = nullptr;
    TORCH_CHECK_WITH(OutOfMemoryError, posix_memalign(&p, page, rounded) == 0,
                     "torchtpu: cannot allocate ", nbytes, " bytes of pinned host memory");
    if (mlock(p, rounded) != 0) {
      int e = errno;
      std::free(p);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "torchtpu: cannot pin ", nbytes,
                       " bytes of host memory (mlock: ", std::strerror(e),
                       "); raise the locked-memory limit (ulimit -l) or do not pin");
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      live[reinterpret_cast<uintptr_t>(p)] = rounded;
    }
    return c10::DataPtr(p, p, &free_pinned, cpu);
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }

  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
};

PinnedAllocator allocator;

}  // namespace

c10::Allocator* pinned_allocator() { return &allocator; }

bool is_pinned(const void* p) {
  auto addr = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mu);
  auto it = live.upper_bound(addr);
  if (it == live.begin()) {
    return false;
  }
  --it;
  return addr < it->first + it->second;
}

}  // namespace torchtpu
