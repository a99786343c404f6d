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
  TORCH_CHECK(false, msg);
}

}  // namespace torchtpu
