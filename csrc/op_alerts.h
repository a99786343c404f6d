// Alerts some ops raise before they run, as CPU's kernels do: nondeterministic-algorithm errors and deprecation
// warnings that depend only on the arguments.
#pragma once

#include "arg_list.h"

namespace torchtpu {

// alert_for_op raises the nondeterministic-algorithm alert of ops CPU alerts for under
// torch.use_deterministic_algorithms(True) (a warning with warn_only=True), and warns where CPU warns that
// writing an expanded tensor in place is deprecated.
void alert_for_op(const ArgList& args);

}  // namespace torchtpu
