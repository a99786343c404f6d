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
  TORCH_CHECK(false, msg);
}

}  // namespace torchtpu
