// The one list of op families aotc supports. Adding a family: write ir/ops/<family>.cc with a
// register_<family>_ops function, declare it here and call it below (one line each).
#include "ir/op_registry.h"

namespace aotc {

void register_unary_elementwise_ops(OpRegistry& registry);
void register_binary_elementwise_ops(OpRegistry& registry);
void register_clip_ops(OpRegistry& registry);
void register_shape_view_ops(OpRegistry& registry);
void register_constant_ops(OpRegistry& registry);
void register_concat_ops(OpRegistry& registry);
void register_transpose_ops(OpRegistry& registry);
void register_softmax_ops(OpRegistry& registry);
void register_conv_ops(OpRegistry& registry);
void register_gemm_ops(OpRegistry& registry);
void register_batch_norm_ops(OpRegistry& registry);
void register_pool_ops(OpRegistry& registry);

void register_all_ops(OpRegistry& registry) {
  register_unary_elementwise_ops(registry);
  register_binary_elementwise_ops(registry);
  register_clip_ops(registry);
  register_shape_view_ops(registry);
  register_constant_ops(registry);
  register_concat_ops(registry);
  register_transpose_ops(registry);
  register_softmax_ops(registry);
  register_conv_ops(registry);
  register_gemm_ops(registry);
  register_batch_norm_ops(registry);
  register_pool_ops(registry);
}

}  // namespace aotc
