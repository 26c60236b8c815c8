// The byte-copy kernel step used for views that must materialise (see copy_lowering.h).
#include "ir/ops/copy_lowering.h"

#include <string>

#include "ir/ops/op_helpers.h"

namespace aotc {

KernelStep copy_kernel_step(ValueId src, ValueId dst, int64_t bytes) {
  KernelStep k;
  k.template_name = "copy";
  k.holes = {{"bytes", int_literal(bytes)}, {"comment", "copy of " + std::to_string(bytes) + " bytes"}};
  k.args = {src, dst};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(bytes, 256);
  return k;
}

}  // namespace aotc
