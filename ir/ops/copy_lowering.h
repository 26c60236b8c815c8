// A device-to-device byte copy as a kernel step (templates/copy.cu.in). Views (Reshape, Flatten,
// Identity...) run no kernel; codegen uses this when a view's output must own its bytes, e.g.
// when it is a graph output and so lives in the caller's buffer, not in its input's.
#pragma once

#include <cstdint>

#include "ir/lowering.h"

namespace aotc {

// Copies `bytes` bytes from value `src` to value `dst` (no alignment assumed: the caller's
// buffers may be any device pointer). `bytes` may be 0: the step then covers nothing but is
// still valid to launch.
KernelStep copy_kernel_step(ValueId src, ValueId dst, int64_t bytes);

}  // namespace aotc
