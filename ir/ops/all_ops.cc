// The one list of op families aotc supports. Adding a family: write ir/ops/<family>.cc with a
// register_<family>_ops function, declare it here and call it below (one line each).
#include "ir/op_registry.h"

namespace aotc {

void register_unary_elementwise_ops(OpRegistry& registry);
void register_binary_elementwise_ops(OpRegistry& registry);
void register_clip_ops(OpRegistry& registry);
void register_compare_logic_ops(OpRegistry& registry);
void register_variadic_elementwise_ops(OpRegistry& registry);
void register_where_ops(OpRegistry& registry);
void register_cast_ops(OpRegistry& registry);
void register_shape_view_ops(OpRegistry& registry);
void register_constant_ops(OpRegistry& registry);
void register_concat_ops(OpRegistry& registry);
void register_transpose_ops(OpRegistry& registry);
void register_softmax_ops(OpRegistry& registry);
void register_conv_ops(OpRegistry& registry);
void register_gemm_ops(OpRegistry& registry);
void register_batch_norm_ops(OpRegistry& registry);
void register_pool_ops(OpRegistry& registry);
void register_gather_ops(OpRegistry& registry);
void register_slice_ops(OpRegistry& registry);
void register_split_ops(OpRegistry& registry);
void register_squeeze_ops(OpRegistry& registry);
void register_shape_of_ops(OpRegistry& registry);
void register_constant_of_shape_ops(OpRegistry& registry);
void register_expand_ops(OpRegistry& registry);
void register_tile_ops(OpRegistry& registry);
void register_pad_ops(OpRegistry& registry);
void register_range_ops(OpRegistry& registry);
void register_trilu_ops(OpRegistry& registry);
void register_cumsum_ops(OpRegistry& registry);
void register_depth_space_ops(OpRegistry& registry);
void register_dropout_ops(OpRegistry& registry);
void register_data_dependent_ops(OpRegistry& registry);
void register_reduce_ops(OpRegistry& registry);
void register_arg_reduce_ops(OpRegistry& registry);
void register_log_softmax_ops(OpRegistry& registry);
void register_layer_norm_ops(OpRegistry& registry);
void register_instance_norm_ops(OpRegistry& registry);
void register_einsum_ops(OpRegistry& registry);
void register_conv_transpose_ops(OpRegistry& registry);
void register_resize_ops(OpRegistry& registry);
void register_gather_nd_ops(OpRegistry& registry);
void register_window_function_ops(OpRegistry& registry);
void register_dft_ops(OpRegistry& registry);
void register_det_ops(OpRegistry& registry);
void register_reverse_sequence_ops(OpRegistry& registry);
void register_lrn_ops(OpRegistry& registry);
void register_mean_variance_norm_ops(OpRegistry& registry);
void register_max_unpool_ops(OpRegistry& registry);
void register_upsample_ops(OpRegistry& registry);
void register_grid_sample_ops(OpRegistry& registry);
void register_roi_align_ops(OpRegistry& registry);

void register_all_ops(OpRegistry& registry) {
  register_unary_elementwise_ops(registry);
  register_binary_elementwise_ops(registry);
  register_clip_ops(registry);
  register_compare_logic_ops(registry);
  register_variadic_elementwise_ops(registry);
  register_where_ops(registry);
  register_cast_ops(registry);
  register_shape_view_ops(registry);
  register_constant_ops(registry);
  register_concat_ops(registry);
  register_transpose_ops(registry);
  register_softmax_ops(registry);
  register_conv_ops(registry);
  register_gemm_ops(registry);
  register_batch_norm_ops(registry);
  register_pool_ops(registry);
  register_gather_ops(registry);
  register_slice_ops(registry);
  register_split_ops(registry);
  register_squeeze_ops(registry);
  register_shape_of_ops(registry);
  register_constant_of_shape_ops(registry);
  register_expand_ops(registry);
  register_tile_ops(registry);
  register_pad_ops(registry);
  register_range_ops(registry);
  register_trilu_ops(registry);
  register_cumsum_ops(registry);
  register_depth_space_ops(registry);
  register_dropout_ops(registry);
  register_data_dependent_ops(registry);
  register_reduce_ops(registry);
  register_arg_reduce_ops(registry);
  register_log_softmax_ops(registry);
  register_layer_norm_ops(registry);
  register_instance_norm_ops(registry);
  register_einsum_ops(registry);
  register_conv_transpose_ops(registry);
  register_resize_ops(registry);
  register_gather_nd_ops(registry);
  register_window_function_ops(registry);
  register_dft_ops(registry);
  register_det_ops(registry);
  register_reverse_sequence_ops(registry);
  register_lrn_ops(registry);
  register_mean_variance_norm_ops(registry);
  register_max_unpool_ops(registry);
  register_upsample_ops(registry);
  register_grid_sample_ops(registry);
  register_roi_align_ops(registry);
}

}  // namespace aotc
