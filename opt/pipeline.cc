// The pass pipeline driver: runs passes in order, times them, verifies after each one and hands
// the graph to the dump callback after the requested pass. The pass list itself is data.
#include "opt/pipeline.h"

#include <chrono>

#include "ir/verifier.h"
#include "opt/passes.h"

namespace aotc {

const std::vector<Pass>& default_pipeline() {
  // Constants first so shape subgraphs vanish before the pattern passes look at the graph;
  // BN folding before epilogue fusion so Conv+BN+Relu becomes one fused conv. The data-movement
  // passes come last: after precision (dtypes final, so a folded Mul's scale is the constant the
  // Mul kernel would read), after layout_nhwc (which keys on Convs and inserts the Transposes at
  // NHWC edges that they then compose) and pad_gemm_n (which matches plain MatMul/Gemm); the MatMul
  // transposes first, so the copy chains see keys in [.., S, D] order with contiguous rows.
  static const std::vector<Pass> kPasses = {
      {"fuse_qdq", fuse_qdq},  // first: it reads the int8 weights before their DequantizeLinear folds
      {"fold_constants", fold_constants},
      {"dead_code", dead_code},
      {"reencode_uint8", reencode_uint8},  // after fuse_qdq, before layout_nhwc picks the int8 kernel
      {"fold_batchnorm", fold_batchnorm},
      {"fold_matmul_scale", fold_matmul_scale},
      {"patchify_conv", patchify_conv},
      {"fuse_gelu", fuse_gelu},
      {"fuse_rms_norm", fuse_rms_norm},  // before precision: the float32 Pow and its Casts never appear
      // After folding (cos / sin tables are constants by then); before precision, so the caches
      // convert with every other constant; before fuse_attention / fuse_attention_operands, which
      // read its moved head transposes as views of the rotary output; it matches Mul / Add /
      // Slice / Neg / Concat only, so the projection passes after it (matmul_to_gemm,
      // fuse_epilogue) see the same MatMuls either way.
      {"fuse_rotary", fuse_rotary},
      {"fuse_swiglu", fuse_swiglu},
      {"fuse_silu", fuse_silu},  // after fuse_swiglu, which takes the gated form whole
      {"pixel_conv_to_gemm", pixel_conv_to_gemm},  // after fuse_silu (one Swish to hoist), before fuse_epilogue
      {"matmul_to_gemm", matmul_to_gemm},
      {"fuse_epilogue", fuse_epilogue},
      {"precision", convert_precision},
      {"drop_exact_casts", drop_exact_casts},
      {"fold_quantize_casts", fold_quantize_casts},  // the int8 regions' edge Casts, after precision
      {"fuse_dequantize_add", fuse_dequantize_add},  // after fold_quantize_casts: the float types are final
      {"fuse_attention", fuse_attention},
      {"merge_qkv_projections", merge_qkv_projections},
      {"merge_swiglu_projections", merge_swiglu_projections},
      {"layout_nhwc", layout_nhwc},
      {"fuse_residual_qadd", fuse_residual_qadd},  // after layout_nhwc (the int8 kernels' epilogue words)
      {"clip_into_depthwise", clip_into_depthwise},
      {"clip_into_pool", clip_into_pool},
      {"fuse_stem_pool", fuse_stem_pool},
      {"fuse_stem_quantize", fuse_stem_quantize},  // after fuse_stem_pool: the pool is the stem's
      {"fuse_depthwise_pointwise", fuse_depthwise_pointwise},
      {"activation_into_depthwise", activation_into_depthwise},  // after it: aotc.DepthwisePointwise has no input activation
      {"merge_projection_shortcut", merge_projection_shortcut},
      {"merge_strided_projection", merge_strided_projection},
      {"fuse_pointwise_pair", fuse_pointwise_pair},  // after the merges (a merged conv3 may be its first)
      {"fuse_output_cast", fuse_output_cast},
      {"fuse_pool_gemm", fuse_pool_gemm},  // after fuse_output_cast (the classifier's float output)
      {"pad_gemm_n", pad_gemm_n},
      {"fuse_matmul_transpose", fuse_matmul_transpose},
      {"fuse_copy_chains", fuse_copy_chains},
      {"fuse_attention_operands", fuse_attention_operands},
      {"cancel_row_permutations", cancel_row_permutations},
      {"merge_strided_qkv_projections", merge_strided_qkv_projections},
      // After every pass that rewrites nodes: it asks the producers' final lowerings.
      {"concat_in_place", concat_in_place},
      {"side_branches", side_branches},  // it records node positions (Graph::side_join): no pass after it moves nodes
      {"slab_into_producer", slab_into_producer},  // reads the lanes side_branches chose
  };
  return kPasses;
}

Expected<std::vector<PassStats>> run_pipeline(Graph& graph, const PipelineOptions& options,
                                              const std::vector<Pass>& passes) {
  const bool dump_all = options.dump_after == "all";
  if (!options.dump_after.empty() && !dump_all) {
    bool found = false;
    std::string names;
    for (const Pass& p : passes) {
      found = found || options.dump_after == p.name;
      names += std::string(names.empty() ? "" : ", ") + p.name;
    }
    if (!found)
      return Status::error("unknown pass '" + escape_for_message(options.dump_after) +
                           "' for --dump-after; passes: " + names + " (or all)");
  }
  std::vector<PassStats> stats;
  for (const std::string& d : options.disabled) {
    bool known = false;
    for (const Pass& p : passes) known = known || d == p.name;
    if (!known) return Status::error("unknown pass '" + escape_for_message(d) + "' for --disable-pass");
  }
  for (const Pass& p : passes) {
    bool disabled = false;
    for (const std::string& d : options.disabled) disabled = disabled || d == p.name;
    if (disabled) continue;
    PassStats s;
    s.name = p.name;
    s.nodes_before = static_cast<int>(graph.nodes.size());
    auto start = std::chrono::steady_clock::now();
    Expected<bool> changed = p.run(graph);
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!changed) return Status::error("pass " + s.name + ": " + changed.status().message());
    s.changed = *changed;
    s.nodes_after = static_cast<int>(graph.nodes.size());
    if (options.verify_each) {
      Status v = verify(graph);
      if (!v) return Status::error("after pass " + s.name + ": " + v.message());
    }
    if (options.on_dump && (dump_all || options.dump_after == p.name)) options.on_dump(p.name, graph);
    stats.push_back(s);
  }
  return stats;
}

}  // namespace aotc
