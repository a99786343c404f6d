#include "errors.h"

#include <c10/util/Exception.h>

namespace torchtpu {

void check(ttpu_status status, const ErrBuf& err, const char* what) {
  if (status == TTPU_OK) {
    return;
  }
  std::string msg = err.str();
  if (msg.empty()) {
    msg = std::string(what) + " failed with status " + std::to_string(status);
  }
  // An allocation past the device memory limit is torch.OutOfMemoryError in Python; nothing is
  // left half-done, so the process keeps working once the caller frees memory.
  TORCH_CHECK_WITH(OutOfMemoryError, status != TTPU_OOM, msg);
  raise_status(status, msg);
}

void raise_status(ttpu_status status, const std::string& msg) {
  // The exception class PyTorch's own kernel raises for the same error.
  TORCH_CHECK_INDEX(status != TTPU_INDEX_ERROR, msg);
  TORCH_CHECK_VALUE(status != TTPU_VALUE_ERROR, msg);
  TORCH_CHECK_TYPE(status != TTPU_TYPE_ERROR, msg);
  TORCH_CHECK_NOT_IMPLEMENTED(status != TTPU_NOT_IMPLEMENTED, msg);
  TORCH_CHECK(false, msg);
}

bool is_error_status(ttpu_status status) {
  return status == TTPU_ERROR || (status >= TTPU_INDEX_ERROR && status <= TTPU_NOT_IMPLEMENTED);
}

}  // namespace torchtpu
