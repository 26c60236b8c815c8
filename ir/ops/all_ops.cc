// The one list of op families aotc supports. Adding a family: write ir/ops/<family>.cc with a
// register_<family>_ops function, declare it here and call it below (one line each).
#include "ir/op_registry.h"

namespace aotc {

void register_unary_elementwise_ops(OpRegistry& registry);

void register_all_ops(OpRegistry& registry) {
  register_unary_elementwise_ops(registry);
}

}  // namespace aotc
