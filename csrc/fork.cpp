#include "fork.h"

#include <pthread.h>

#include <atomic>

#include <c10/util/Exception.h>


namespace torchtpu {
namespace {

std::atomic<bool> forked{false};

// on_fork_child only sets a flag: the Go runtime's threads do not survive fork, so calling into
// Go here (even ttpu_mark_forked) can park the child forever. Every shim path into Go checks
// the flag first instead.
void on_fork_child() { forked.store(true); }

struct ForkHandlerRegistration {
  ForkHandlerRegistration() { pthread_atfork(nullptr, nullptr, &on_fork_child); }
};

}  // namespace

bool in_forked_child() { return forked.load(std::memory_order_relaxed); }

void check_not_forked() { TORCH_CHECK(!in_forked_child(), kForkedMessage); }

static ForkHandlerRegistration fork_handler_registration;

}  // namespace torchtpu
