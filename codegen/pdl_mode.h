// How generated kernels use programmatic dependent launch (templates/common.cuh, aotc --pdl).
#pragma once

namespace aotc {

// kOff: every kernel is launched plainly. kWait: kernels are launched with programmatic stream
// serialization and wait for their predecessor's writes (griddepcontrol.wait); the predecessor
// signals at exit. kEarly: each kernel also signals its dependents at its start
// (griddepcontrol.launch_dependents), so they are scheduled while it runs.
enum class PdlMode { kOff, kWait, kEarly };

}  // namespace aotc
