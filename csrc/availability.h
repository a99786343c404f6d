// Whether the device can be used: not in a forked child, and the plugin initialized.
#pragma once

#include <string>

namespace torchtpu {

// check_usable throws c10::Error in a forked child or after the Python package recorded an init failure.
void check_usable();

// set_init_error records why the plugin could not be initialized (empty: clear it).
void set_init_error(const std::string& message);

}  // namespace torchtpu
