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

// raise_status throws msg as the exception class an error status names
// (IndexError for TTPU_INDEX_ERROR, ..., RuntimeError for TTPU_ERROR).
[[noreturn]] void raise_status(ttpu_status status, const std::string& msg);

// is_error_status reports whether status is TTPU_ERROR or one of its kinds.
bool is_error_status(ttpu_status status);

}  // namespace torchtpu
