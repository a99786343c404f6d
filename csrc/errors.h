// Turning ttpu_status codes and their messages into c10::Error.
#pragma once

#include <string>

#include "torchtpu.h"

namespace torchtpu {

// ErrBuf is the caller-owned message buffer every fallible ABI call takes.
struct ErrBuf {
  static constexpr int64_t kLen = 4096;
  char buf[kLen];
  ErrBuf() { buf[0] = '\0'; }
  char* data() { return buf; }
  int64_t len() const { return kLen; }
  std::string str() const { return std::string(buf); }
};

// check throws c10::Error (a RuntimeError in Python) when status is not TTPU_OK.
// what names the call that failed when the message does not already say it.
void check(ttpu_status status, const ErrBuf& err, const char* what);

}  // namespace torchtpu
