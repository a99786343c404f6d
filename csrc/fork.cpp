#include "fork.h"

#include <pthread.h>

#include <atomic>

#include <c10/util/Exception.h>

#include "torchtpu.h"

namespace torchtpu {
namespace {

std::atomic<bool> forked{false};

void on_fork_child() {
  forked.store(true);
  ttpu_mark_forked();
}

struct ForkHandlerRegistration {
  ForkHandlerRegistration() { pthread_atfork(nullptr, nullptr, &on_fork_child); }
};

}  // namespace

bool in_forked_child() { return forked.load(std::memory_order_relaxed); }

void check_not_forked() { TORCH_CHECK(!in_forked_child(), kForkedMessage); }

static ForkHandlerRegistration fork_handler_registration;

}  // namespace torchtpu
