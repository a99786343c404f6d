// Fork safety: a forked child never calls into the Go engine.
#pragma once

namespace torchtpu {

constexpr const char* kForkedMessage =
    "torchtpu: the tpu device cannot be used in a forked child process "
    "(DataLoader workers must not touch tpu tensors)";

// in_forked_child reports whether this process is a fork of the one that loaded torchtpu.
bool in_forked_child();

// check_not_forked throws c10::Error with kForkedMessage in a forked child.
void check_not_forked();

}  // namespace torchtpu
