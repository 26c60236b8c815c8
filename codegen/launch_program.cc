// Lowering every node, resolving pointer locations and assembling the weight blob (see
// launch_program.h).
#include "codegen/launch_program.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "codegen/identifiers.h"
#include "codegen/step_costs.h"
#include "ir/small_dtypes.h"

namespace aotc {
namespace {

int64_t align_up(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

std::string describe_value(const Value& v) {
  return sanitize_comment(v.name, 48) + " " + dtype_name(v.dtype) + " " + shape_str(v.shape);
}

class ProgramBuilder {
 public:
  ProgramBuilder(const Graph& graph, const MemoryPlan& plan) : graph_(graph), plan_(plan) {}

  Expected<LaunchProgram> build(const OpRegistry& registry) {
    for (size_t i = 0; i < graph_.inputs.size(); ++i)
      AOTC_RETURN_IF_ERROR(check_io_value(graph_.inputs[i], "input"));
    for (size_t i = 0; i < graph_.outputs.size(); ++i)
      AOTC_RETURN_IF_ERROR(check_io_value(graph_.outputs[i], "output"));
    AOTC_RETURN_IF_ERROR(check_side_join());
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      size_t first = program_.steps.size();
      AOTC_RETURN_IF_ERROR(add_node(static_cast<int>(n), registry));
      mark_lane(n, first);
    }
    if (graph_.target.l2_prefetch) prefetch_following_weights();
    size_t first_copy = program_.steps.size();
    AOTC_RETURN_IF_ERROR(add_output_copies());
    // The output copies read values any lane may have written.
    if (any_side_ && first_copy < program_.steps.size()) program_.steps[first_copy].wait = true;
    int64_t arena = align_up(std::max<int64_t>(plan_.arena_bytes, 0), kArenaAlignment);
    if (!program_.matmuls.empty()) {
      program_.lt_workspace_offset = arena;
      int64_t largest_d = 0;
      for (const ProgramMatmul& m : program_.matmuls)
        largest_d = std::max(largest_d, m.step.m * m.step.n * m.step.batch);
      program_.lt_workspace_bytes = align_up(
          std::clamp(4 * largest_d, kCublasLtWorkspaceMinBytes, kCublasLtWorkspaceMaxBytes),
          kArenaAlignment);
      arena += program_.lt_workspace_bytes;
      for (const ProgramStep& s : program_.steps)
        if (s.lane == 1 && s.kind == ProgramStep::Kind::kMatmul) {
          program_.lt_aux_workspace_offset = arena;
          arena += program_.lt_workspace_bytes;
          break;
        }
    }
    program_.arena_bytes = arena;
    return std::move(program_);
  }

 private:
  // Each kernel with l2_prefetch_args gets the blob range [begin, end) of the weights that the
  // steps after it read, up to and including the next such kernel (whose own weights it thus
  // brings in), when that range is at most kL2PrefetchMaxBytes (the blob holds weights in first-use
  // order, so the range is those steps' weights and little else). Null otherwise.
  static constexpr int64_t kL2PrefetchMaxBytes = int64_t{24} << 20;
  void prefetch_following_weights() {
    std::map<int64_t, int64_t> bytes_at;  // weight offset -> bytes
    for (const NamedOffset& w : program_.weight_symbols) bytes_at[w.offset] = w.bytes;
    auto step_weights = [&](const ProgramStep& s, int64_t& lo, int64_t& hi) {
      auto take = [&](const Location& l) {
        if (l.space != Location::Space::kWeights) return;
        auto it = bytes_at.find(l.offset);
        const int64_t end = l.offset + (it != bytes_at.end() ? it->second : 0);
        lo = std::min(lo, l.offset);
        hi = std::max(hi, end);
      };
      if (s.kind == ProgramStep::Kind::kKernel) {
        for (const Location& l : program_.kernels[static_cast<size_t>(s.index)].args) take(l);
      } else if (s.kind == ProgramStep::Kind::kMatmul) {
        const ProgramMatmul& m = program_.matmuls[static_cast<size_t>(s.index)];
        for (const Location* l : {&m.a, &m.b, &m.c, &m.bias}) take(*l);
      } else {
        take(program_.copies[static_cast<size_t>(s.index)].src);
      }
    };
    const std::vector<ProgramStep>& steps = program_.steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].kind != ProgramStep::Kind::kKernel) continue;
      ProgramKernel& k = program_.kernels[static_cast<size_t>(steps[i].index)];
      if (!k.l2_prefetch_args) continue;  // else add_kernel gave it the two (null) entries
      int64_t lo = INT64_MAX, hi = 0;
      for (size_t j = i + 1; j < steps.size(); ++j) {
        step_weights(steps[j], lo, hi);
        if (steps[j].kind == ProgramStep::Kind::kKernel &&
            program_.kernels[static_cast<size_t>(steps[j].index)].l2_prefetch_args)
          break;
      }
      if (hi <= lo || hi - lo > kL2PrefetchMaxBytes) continue;
      Location& begin = k.args[k.args.size() - 2];
      Location& end = k.args[k.args.size() - 1];
      begin.space = end.space = Location::Space::kWeights;
      begin.offset = lo;
      end.offset = hi;
    }
  }

  // Graph::side_join is empty or names, for each side node, a later main-lane node.
  Status check_side_join() const {
    const std::vector<int>& j = graph_.side_join;
    if (j.empty()) return Status::ok();
    if (j.size() != graph_.nodes.size())
      return Status::error("side_join has " + std::to_string(j.size()) + " entries for " +
                           std::to_string(graph_.nodes.size()) + " nodes");
    for (size_t n = 0; n < j.size(); ++n)
      if (j[n] >= 0 && (static_cast<size_t>(j[n]) <= n || static_cast<size_t>(j[n]) >= j.size() ||
                        j[static_cast<size_t>(j[n])] >= 0))
        return node_error(graph_.nodes[n], "side-lane node joined by node " + std::to_string(j[n]) +
                                               ", which is not a later main-lane node");
    return Status::ok();
  }

  // The steps of node n (from `first`) on its lane: a side node's first step forks; the first
  // main-lane step at or after a node that joins a side node waits for the side lane (a join
  // node without steps, a view, passes the wait on).
  void mark_lane(size_t n, size_t first) {
    const std::vector<int>& j = graph_.side_join;
    if (j.empty()) return;
    if (joins_.empty()) {
      joins_.assign(j.size(), false);
      for (int target : j)
        if (target >= 0) joins_[static_cast<size_t>(target)] = true;
    }
    if (j[n] >= 0) {
      for (size_t s = first; s < program_.steps.size(); ++s) program_.steps[s].lane = 1;
      if (first < program_.steps.size()) program_.steps[first].wait = true;
      any_side_ = any_side_ || first < program_.steps.size();
      return;
    }
    join_pending_ = join_pending_ || joins_[n];
    if (join_pending_ && first < program_.steps.size()) {
      program_.steps[first].wait = true;
      join_pending_ = false;
    }
  }

  Status check_io_value(ValueId id, const char* what) {
    if (id < 0 || static_cast<size_t>(id) >= graph_.values.size())
      return Status::error(std::string("graph ") + what + " refers to a missing value");
    const Value& v = graph_.value(id);
    if (!v.shape_known || dtype_size(v.dtype) == 0)
      return Status::error(std::string("graph ") + what + " '" + escape_for_message(v.name) +
                           "' has no static shape or a dtype codegen cannot store");
    return Status::ok();
  }

  // Where the bytes of `id` live at run time.
  Expected<Location> locate(ValueId id, const Node& node) {
    ValueId root = id;
    for (size_t hops = 0; graph_.value(root).alias_of != kNoValue; ++hops) {
      if (hops > graph_.values.size()) return node_error(node, "alias cycle in the memory plan");
      root = graph_.value(root).alias_of;
    }
    const Value& v = graph_.value(root);
    Location loc;
    if (v.is_constant()) return weight_location(root);
    for (size_t i = 0; i < graph_.inputs.size(); ++i)
      if (graph_.inputs[i] == root) {
        loc.space = Location::Space::kInput;
        loc.index = static_cast<int>(i);
        return loc;
      }
    for (size_t i = 0; i < graph_.outputs.size(); ++i)
      if (graph_.outputs[i] == root) {
        loc.space = Location::Space::kOutput;
        loc.index = static_cast<int>(i);
        return loc;
      }
    if (v.arena_offset < 0)
      return node_error(node, "value '" + escape_for_message(v.name) +
                                  "' has no storage (not in the arena, not a graph input, output "
                                  "or constant): was the memory plan run?");
    if (v.arena_offset % kArenaAlignment != 0 || v.arena_offset + v.byte_size() > plan_.arena_bytes)
      return node_error(node, "value '" + escape_for_message(v.name) + "' at arena offset " +
                                  std::to_string(v.arena_offset) + " (" +
                                  std::to_string(v.byte_size()) +
                                  " bytes) is misaligned or outside the arena of " +
                                  std::to_string(plan_.arena_bytes) + " bytes");
    loc.space = Location::Space::kArena;
    loc.offset = v.arena_offset;
    loc.symbol = "ARENA_V" + std::to_string(root) + "_" + sanitize_identifier(v.name, 32);
    if (arena_seen_.emplace(root, true).second)
      program_.arena_symbols.push_back({loc.symbol, loc.offset, v.byte_size(), describe_value(v)});
    return loc;
  }

  Location weight_location(ValueId id) {
    const Value& v = graph_.value(id);
    Location loc;
    loc.space = Location::Space::kWeights;
    loc.symbol = "WEIGHT_V" + std::to_string(id) + "_" + sanitize_identifier(v.name, 32);
    auto it = weight_offset_.find(id);
    if (it != weight_offset_.end()) {
      loc.offset = it->second;
      return loc;
    }
    std::vector<uint8_t>& blob = program_.weights;
    int64_t offset = align_up(static_cast<int64_t>(blob.size()), kWeightAlignment);
    const Tensor& t = *v.constant;
    blob.resize(static_cast<size_t>(offset + t.byte_size()), 0);
    if (t.byte_size() > 0) std::memcpy(blob.data() + offset, t.raw(), static_cast<size_t>(t.byte_size()));
    weight_offset_[id] = offset;
    program_.weight_symbols.push_back({loc.symbol, offset, t.byte_size(), describe_value(v)});
    loc.offset = offset;
    return loc;
  }

  Expected<Location> locate_arg(ValueId arg, int node_index, const Lowering& lowering) {
    const Node& node = graph_.nodes[static_cast<size_t>(node_index)];
    if (arg == kNullArg) return Location{};
    if (arg == kScratchArg) {
      int64_t offset = static_cast<size_t>(node_index) < plan_.scratch_offset.size()
                           ? plan_.scratch_offset[static_cast<size_t>(node_index)]
                           : -1;
      if (lowering.scratch_bytes <= 0 || offset < 0 ||
          offset + lowering.scratch_bytes > plan_.arena_bytes)
        return node_error(node, "scratch buffer of " + std::to_string(lowering.scratch_bytes) +
                                    " bytes has no valid arena offset in the memory plan");
      Location loc;
      loc.space = Location::Space::kArena;
      loc.offset = offset;
      loc.symbol = "SCRATCH_N" + std::to_string(node_index);
      if (scratch_seen_.emplace(node_index, true).second)
        program_.arena_symbols.push_back({loc.symbol, offset, lowering.scratch_bytes,
                                          "scratch of node " + sanitize_comment(node.name, 48)});
      return loc;
    }
    if (arg < 0 || static_cast<size_t>(arg) >= graph_.values.size())
      return node_error(node, "lowering refers to value id " + std::to_string(arg) +
                                  ", which does not exist");
    return locate(arg, node);
  }

  // At most kCommentValues inputs and outputs each are described: a node is commented once per
  // kernel it lowers to, and a Concat of 4,096 inputs (an unrolled Scan) lowers to 4,096 slab
  // kernels, which made the comments quadratic in the inputs (a fuzz find: 25 s in the sanitizer
  // build for one 370-byte model).
  static constexpr size_t kCommentValues = 8;
  std::string node_comment(const Node& node) {
    std::string c = "ONNX node " + sanitize_comment(node.name.empty() ? "(unnamed)" : node.name, 60) +
                    " (" + sanitize_comment(node.op_type, 40) + ")";
    auto describe = [&](const std::vector<ValueId>& ids, const char* what) {
      size_t present = 0;
      for (ValueId id : ids)
        if (id != kNoValue && ++present <= kCommentValues)
          c += std::string("; ") + what + " " + describe_value(graph_.value(id));
      if (present > kCommentValues)
        c += "; and " + std::to_string(present - kCommentValues) + " more " + what + "puts";
    };
    describe(node.inputs, "in");
    describe(node.outputs, "out");
    return c;
  }

  Status add_kernel(int node_index, const KernelStep& k, const Lowering& lowering) {
    const Node& node = graph_.nodes[static_cast<size_t>(node_index)];
    ProgramKernel pk;
    const std::string& base = node.name.empty() ? node.op_type : node.name;
    // Library kernels (CUTLASS instantiations) carry "_lib_" in their symbol, so profiles tell them
    // from aotc's own kernels and tools can select them by name (compute-sanitizer's
    // --kernel-name-exclude kns=_lib_: racecheck fails to instrument CUTLASS's Sm80 kernels).
    pk.name = "k" + std::to_string(program_.kernels.size()) + (k.library_params ? "_lib_" : "_") +
              sanitize_identifier(base, 40);
    pk.function = pk.name;
    pk.template_name = k.template_name;
    for (const auto& [key, value] : k.holes)
      pk.holes.emplace_back(key, key == "comment" ? sanitize_comment(value, 200) : value);
    pk.comment = node_comment(node);
    pk.node_index = node_index;
    pk.grid = k.grid;
    pk.block = k.block;
    pk.shared_bytes = k.shared_bytes;
    pk.cluster_size = k.cluster_size;
    if (k.cluster_size < 0 || k.cluster_size > 16)
      return node_error(node, "kernel step asks for a cluster of " + std::to_string(k.cluster_size) +
                                  " CTAs (at most 16)");
    pk.library_params = k.library_params;
    pk.builder_args = k.builder_args;
    pk.host_params = k.host_params;
    if (k.host_params && !k.library_params)
      return node_error(node, "lowering asks for compile-time params of a kernel that is not a library kernel");
    if (k.library_params) {
      // The launch shape comes from the params builder at create(); only the table sizes matter.
      if (k.builder_args.size() > kLibraryMaxBuilderArgs)
        return node_error(node, "library kernel step has " + std::to_string(k.builder_args.size()) +
                                    " builder args (at most " +
                                    std::to_string(kLibraryMaxBuilderArgs) + ")");
      if (k.args.size() > kLibraryMaxPointerArgs)
        return node_error(node, "library kernel step has " + std::to_string(k.args.size()) +
                                    " pointer args (at most " +
                                    std::to_string(kLibraryMaxPointerArgs) + ")");
    } else {
      if (!k.builder_args.empty())
        return node_error(node, "lowering gives builder args to a kernel that is not a library kernel");
      if (k.grid.x < 1 || k.grid.y < 1 || k.grid.z < 1 || k.block.x < 1 || k.block.y < 1 ||
          k.block.z < 1 || k.block.x * k.block.y * k.block.z > 1024 || k.grid.y > 65535 ||
          k.grid.z > 65535 || k.grid.x > 0x7fffffffLL || k.shared_bytes < 0)
        return node_error(node, "lowering gives an invalid launch shape");
    }
    if (!k.arg_byte_offsets.empty() && k.arg_byte_offsets.size() != k.args.size())
      return node_error(node, "lowering gives " + std::to_string(k.arg_byte_offsets.size()) + " arg offsets for " +
                                  std::to_string(k.args.size()) + " args");
    for (size_t i = 0; i < k.args.size(); ++i) {
      auto loc = locate_arg(k.args[i], node_index, lowering);
      if (!loc) return loc.status();
      const int64_t extra = k.arg_byte_offsets.empty() ? 0 : k.arg_byte_offsets[i];
      if (extra != 0) {
        if (extra < 0 || loc->space == Location::Space::kNull)
          return node_error(node, "lowering gives arg " + std::to_string(i) + " an invalid byte offset");
        loc->offset += extra;
        if (!loc->symbol.empty()) loc->symbol = "(" + loc->symbol + " + " + std::to_string(extra) + "ULL)";
      }
      pk.args.push_back(*loc);
    }
    pk.l2_prefetch_args = k.l2_prefetch_args;
    if (k.l2_prefetch_args && k.library_params)  // its pointer slots are counted above without them
      return node_error(node, "lowering asks a library kernel for L2 prefetch arguments");
    if (k.l2_prefetch_args) pk.args.resize(pk.args.size() + 2);  // null; prefetch_following_weights
    program_.steps.push_back({ProgramStep::Kind::kKernel, static_cast<int>(program_.kernels.size()), pk.name,
                              kernel_step_flops(node, graph_, k),
                              kernel_step_bytes(graph_, k, lowering.scratch_bytes)});
    program_.steps.back().node_index = node_index;
    program_.kernels.push_back(std::move(pk));
    return Status::ok();
  }

  Status add_matmul(int node_index, const MatmulStep& m, const Lowering& lowering) {
    const Node& node = graph_.nodes[static_cast<size_t>(node_index)];
    if (m.dtype != DType::kFloat32 && m.dtype != DType::kFloat16 && m.dtype != DType::kBFloat16)
      return node_error(node, "cuBLASLt matmul of " + dtype_name(m.dtype) + " is not supported");
    if (m.d_dtype != DType::kUndefined && m.d_dtype != m.dtype && m.d_dtype != DType::kFloat32)
      return node_error(node, "cuBLASLt matmul with a " + dtype_name(m.d_dtype) + " result is not supported");
    if (m.m < 1 || m.n < 1 || m.k < 1 || m.batch < 1)
      return node_error(node, "matmul with an empty dimension is not supported");
    bool wants_bias = MatmulStep::has_bias(m.epilogue);
    if (wants_bias != (m.bias != kNullArg))
      return node_error(node, "matmul bias pointer and epilogue disagree");
    if (!std::isfinite(m.alpha) || !std::isfinite(m.beta))
      return node_error(node, "matmul alpha/beta must be finite");
    if (m.a == kNullArg || m.b == kNullArg || m.d == kNullArg)
      return node_error(node, "matmul lacks an A, B or D operand");
    if (graph_.target.matmul_reference)  // --matmul-impl reference: aotc's own kernel, no cuBLASLt
      return add_kernel(node_index, matmul_reference_kernel(m, "GEMM of " + node.op_type + " on the reference kernel"),
                        lowering);
    ProgramMatmul pm;
    pm.step = m;
    pm.label = sanitize_identifier(node.name.empty() ? node.op_type : node.name, 40);
    ValueId ids[5] = {m.a, m.b, m.c, m.d, m.bias};
    Location* locs[5] = {&pm.a, &pm.b, &pm.c, &pm.d, &pm.bias};
    for (int i = 0; i < 5; ++i) {
      auto loc = locate_arg(ids[i], node_index, lowering);
      if (!loc) return loc.status();
      *locs[i] = *loc;
    }
    program_.steps.push_back({ProgramStep::Kind::kMatmul, static_cast<int>(program_.matmuls.size()),
                              "mm" + std::to_string(program_.matmuls.size()) + "_" + pm.label,
                              matmul_step_flops(m), matmul_step_bytes(m)});
    program_.steps.back().node_index = node_index;
    program_.matmuls.push_back(std::move(pm));
    return Status::ok();
  }

  void add_copy(const Location& src, const Location& dst, int64_t bytes, std::string label) {
    if (bytes <= 0 || src == dst) return;
    program_.steps.push_back({ProgramStep::Kind::kCopy, static_cast<int>(program_.copies.size()),
                              "copy" + std::to_string(program_.copies.size()) + "_" + sanitize_identifier(label, 48),
                              0, 2 * bytes});
    program_.copies.push_back({src, dst, bytes, std::move(label)});
  }

  Status add_node(int node_index, const OpRegistry& registry) {
    const Node& node = graph_.nodes[static_cast<size_t>(node_index)];
    const OpDef* def = registry.find(node.op_type, node.domain);
    if (!def) return node_error(node, "unknown op (not in the registry)");
    if (!def->lower) return node_error(node, "op has no GPU lowering");
    // float8 / float4 / int4 / int2 values (ir/small_dtypes.h) are stored one byte per element on
    // the GPU and in the ABI, but only the ops whose lowering converts them (traits.gpu_small_dtypes:
    // Cast, CastLike, Q/DequantizeLinear) may read or write them. A constant folded away is fine.
    for (const std::vector<ValueId>* ids : {&node.inputs, &node.outputs})
      for (ValueId id : *ids)
        if (id != kNoValue && dtype_is_small(graph_.value(id).dtype) && !def->traits.gpu_small_dtypes)
          return node_error(node, "dtype " + dtype_name(graph_.value(id).dtype) +
                                      " has no GPU storage in aotc outside Cast, CastLike and Q/DequantizeLinear (the CPU reference only)");
    auto lowered = def->lower(node, graph_);
    if (!lowered) return lowered.status();
    const Lowering& l = *lowered;
    // Rows of another stride than packed (opt/concat_in_place.cc) only where the lowering writes
    // them so, and only in output 0.
    for (size_t o = 0; o < node.outputs.size(); ++o)
      if (node.outputs[o] != kNoValue && graph_.row_stride(node.outputs[o]) != 0 &&
          (o != 0 || l.is_view || !l.strided_output))
        return node_error(node, "output " + std::to_string(o) + " has a row stride, which this lowering does not write");
    if (l.is_view) {
      // The plan normally aliases the output; when it did not (e.g. the view is a graph output),
      // the bytes are copied.
      if (node.inputs.empty() || node.outputs.empty() || node.inputs[0] == kNoValue)
        return node_error(node, "a view needs input 0 and output 0");
      auto src = locate(node.inputs[0], node);
      if (!src) return src.status();
      auto dst = locate(node.outputs[0], node);
      if (!dst) return dst.status();
      add_copy(*src, *dst, graph_.value(node.outputs[0]).byte_size(),
               "view " + sanitize_identifier(node.name.empty() ? node.op_type : node.name, 40));
      return Status::ok();
    }
    for (const LoweredStep& step : l.steps) {
      if (step.kind == LoweredStep::Kind::kKernel)
        AOTC_RETURN_IF_ERROR(add_kernel(node_index, step.kernel, l));
      else
        AOTC_RETURN_IF_ERROR(add_matmul(node_index, step.matmul, l));
    }
    return Status::ok();
  }

  // A graph output whose bytes live elsewhere (a view of an intermediate, a graph input, a
  // constant, an output listed twice) is copied into the caller's buffer.
  Status add_output_copies() {
    Node pseudo;
    pseudo.name = "graph outputs";
    pseudo.op_type = "output";
    for (size_t j = 0; j < graph_.outputs.size(); ++j) {
      ValueId id = graph_.outputs[j];
      auto src = locate(id, pseudo);
      if (!src) return src.status();
      Location dst;
      dst.space = Location::Space::kOutput;
      dst.index = static_cast<int>(j);
      add_copy(*src, dst, graph_.value(id).byte_size(), "output " + std::to_string(j));
    }
    return Status::ok();
  }

  const Graph& graph_;
  const MemoryPlan& plan_;
  LaunchProgram program_;
  std::map<ValueId, int64_t> weight_offset_;
  std::map<ValueId, bool> arena_seen_;
  std::map<int, bool> scratch_seen_;
  std::vector<bool> joins_;     // per node: some side node joins at it
  bool join_pending_ = false;   // a join node emitted no step yet
  bool any_side_ = false;       // a side node emitted steps
};

}  // namespace

Expected<LaunchProgram> build_launch_program(const Graph& graph, const MemoryPlan& plan,
                                             const OpRegistry& registry) {
  ProgramBuilder builder(graph, plan);
  return builder.build(registry);
}

}  // namespace aotc

