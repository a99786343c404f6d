#include "availability.h"

#include <atomic>
#include <mutex>

#include <c10/util/Exception.h>

#include "fork.h"

namespace torchtpu {
namespace {

std::mutex mu;
std::string init_error;
std::atomic<bool> has_init_error{false};

}  // namespace

void check_usable() {
  check_not_forked();
  if (has_init_error.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mu);
    TORCH_CHECK(false, init_error);
  }
}

void set_init_error(const std::string& message) {
  std::lock_guard<std::mutex> lock(mu);
  init_error = message;
  has_init_error.store(!message.empty(), std::memory_order_release);
}

}  // namespace torchtpu
