// PrivateUse1 hooks: what PyTorch asks a device backend (generators, availability, devices).
#pragma once

namespace torchtpu {

// hooks_registered is true once the hooks are installed (a static registration).
bool hooks_registered();

}  // namespace torchtpu
