// fuse_copy_chains: chains of pure data movement (Transpose, Reshape, Flatten, Squeeze, Unsqueeze,
// Identity, Gather of one constant index, Slice with constant parameters, Split, and one trailing
// Mul by a scalar constant or Cast between float types) become ONE aotc.StridedCopy from the chain's source, their affine maps
// composed (opt/strided_view.h). Transformer exports run 4-10 such kernels between the QKV
// projection and the attention MatMuls, each a full read + write of the tensor.
//
// A value is absorbed (not materialised) when it is not a graph output and every reader is such
// an op reading it as its data; then each reader's chain reaches back through it, so three
// Gathers of one transposed tensor each read their part straight from the un-transposed source.
// A reshape may merge dims that are not contiguous in the composed view (torch's
// MultiheadAttention views a strided q [S, B, E] as [S, B*H, D]): the view then keeps the pieces
// (opt/strided_view.h) and the gather walks them; only where a reshape or slice cuts a piece
// unevenly does the chain end before it (that value is materialised, the reshape stays a view).
// A chain is rewritten when it holds at least two kernels (Transpose, Gather, Slice, Split part,
// Mul), or one kernel that composes to the identity (then it becomes a Reshape, a view, and no
// kernel remains); chains of views alone stay views, and a lone kernel stays what it is (the
// tiled Transpose kernel reads better than a gather).
#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/slice.h"
#include "opt/passes.h"
#include "opt/strided_view.h"

namespace aotc {
namespace {

// What one op does to the view of its data input.
struct Link {
  size_t data_input = 0;   // index of the data input in node.inputs
  bool kernel = false;     // runs a kernel today (Transpose, Gather, Slice, Split, Mul)
  std::optional<float> scale;  // a Mul by this scalar constant
  std::optional<DType> to;     // a Cast between float types (ends its chain, like a scale)
};

bool is_op(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

// The constant single-element integer at input `i`, if that is what it is.
std::optional<int64_t> scalar_index(const Graph& g, const Node& n, size_t i) {
  if (n.input(i) == kNoValue) return std::nullopt;
  const Value& v = g.value(n.inputs[i]);
  if (!v.is_constant() || v.numel() != 1 || (v.dtype != DType::kInt64 && v.dtype != DType::kInt32)) return std::nullopt;
  return v.constant->get_int(0);
}

// The value of a single-element float constant as a float, when the Mul kernel's product with it
// is what StridedCopy's scale computes (16-bit and fp32 always; fp64 only when exact in float).
std::optional<float> scale_constant(const Graph& g, ValueId id) {
  const Value& v = g.value(id);
  if (!v.is_constant() || v.numel() != 1 || !dtype_is_float(v.dtype)) return std::nullopt;
  const double d = v.constant->get(0);
  const float f = static_cast<float>(d);
  if (static_cast<double>(f) != d && !std::isnan(d)) return std::nullopt;
  return f;
}

// `n` as a link of a copy chain, or nothing.
std::optional<Link> link_of(const Graph& g, const Node& n) {
  if (!n.domain.empty() || n.inputs.empty() || n.input(0) == kNoValue || n.outputs.empty()) return std::nullopt;
  if (n.attr_int("channels_last", 0) != 0) return std::nullopt;
  for (ValueId out : n.outputs)
    if (out == kNoValue || !g.value(out).shape_known) return std::nullopt;
  const Value& x = g.value(n.inputs[0]);
  if (!x.shape_known || x.numel() == 0) return std::nullopt;
  Link l;
  if (n.outputs.size() != 1) {
    if (!is_op(n, "Split")) return std::nullopt;
    l.kernel = true;
    return l;
  }
  if (is_op(n, "Reshape") || is_op(n, "Flatten") || is_op(n, "Squeeze") || is_op(n, "Unsqueeze") ||
      is_op(n, "Identity"))
    return l;
  if (is_op(n, "Transpose")) {
    l.kernel = true;
    return l;
  }
  if (is_op(n, "Gather")) {
    std::optional<int64_t> idx = scalar_index(g, n, 1);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    int64_t axis = n.attr_int("axis", 0);
    if (axis < 0) axis += rank;
    if (!idx || axis < 0 || axis >= rank) return std::nullopt;
    const int64_t dim = x.shape[static_cast<size_t>(axis)];
    if (*idx < -dim || *idx >= dim) return std::nullopt;  // the reference reports it; leave it be
    l.kernel = true;
    return l;
  }
  if (is_op(n, "Slice")) {
    if (!slice_params(n, g)) return std::nullopt;
    l.kernel = true;
    return l;
  }
  if (is_op(n, "Cast") && n.inputs.size() == 1 && n.outputs.size() == 1 && dtype_is_float(x.dtype) &&
      dtype_is_float(g.value(n.outputs[0]).dtype) && g.value(n.outputs[0]).dtype != x.dtype) {
    l.kernel = true;
    l.to = g.value(n.outputs[0]).dtype;
    return l;
  }
  if (is_op(n, "Mul") && n.inputs.size() == 2 && n.input(1) != kNoValue && dtype_is_float(x.dtype)) {
    for (size_t s : {size_t{1}, size_t{0}}) {
      const size_t d = 1 - s;
      std::optional<float> c = scale_constant(g, n.inputs[s]);
      const Value& data = g.value(n.inputs[d]);
      if (!c || data.is_constant() || data.shape != g.value(n.outputs[0]).shape) continue;
      l.data_input = d;
      l.kernel = true;
      l.scale = c;
      return l;
    }
  }
  return std::nullopt;
}

// Maps `v` (the view of node n's data input) to the view of output `slot`; false when the result
// is not a strided view (a reshape or slice that cuts a piece of the view unevenly).
bool apply_link(const Graph& g, const Node& n, size_t slot, StridedView& v) {
  const Value& out = g.value(n.outputs[slot]);
  const Shape& in = g.value(n.inputs[0]).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  if (is_op(n, "Transpose")) {
    std::vector<int64_t> perm = n.attr_ints("perm");
    if (!n.has_attr("perm"))
      for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    view_permute(v, perm);
    return true;
  }
  if (is_op(n, "Gather")) {
    int64_t axis = n.attr_int("axis", 0);
    if (axis < 0) axis += rank;
    const int64_t dim = in[static_cast<size_t>(axis)];
    int64_t idx = *scalar_index(g, n, 1);
    view_select(v, static_cast<size_t>(axis), idx < 0 ? idx + dim : idx);
    return view_reshape(v, out.shape);  // a [1]-shaped index keeps a dim of 1
  }
  if (is_op(n, "Slice")) {
    SliceParams p = *slice_params(n, g);
    StridedView sliced = v;
    for (size_t d = 0; d < p.out.size(); ++d)
      if (!view_slice(sliced, d, in[d], p.start[d], p.step[d], p.out[d])) return false;
    v = sliced;
    return true;
  }
  if (is_op(n, "Split")) {
    int64_t axis = n.attr_int("axis", 0);
    if (axis < 0) axis += rank;
    const size_t a = static_cast<size_t>(axis);
    int64_t start = 0;
    for (size_t i = 0; i < slot; ++i) start += g.value(n.outputs[i]).shape[a];
    return view_slice(v, a, in[a], start, 1, out.shape[a]);
  }
  if (is_op(n, "Mul") || is_op(n, "Cast")) return true;
  return view_reshape(v, out.shape);  // Reshape, Flatten, Squeeze, Unsqueeze, Identity
}

struct Chain {
  int end = -1;                            // node index of the last link (one output)
  ValueId source = kNoValue;
  std::vector<std::pair<int, size_t>> links;  // (node index, output slot), source side first
  StridedView view;
  std::optional<float> scale;
  std::optional<DType> to;
  int kernels = 0;
};

class ChainFinder {
 public:
  explicit ChainFinder(const Graph& g) : g_(g), producers_(g.producers()), consumers_(g.consumers()) {
    links_.resize(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) links_[i] = link_of(g, g.nodes[i]);
    cut_.assign(g.values.size(), false);
  }

  // Every chain end with its composed view; values whose reshape does not compose are cut (kept
  // materialised) and the search repeats, at most once per value.
  std::vector<Chain> find() {
    for (;;) {
      mark_absorbed();
      std::vector<Chain> chains;
      bool retry = false;
      for (size_t i = 0; i < g_.nodes.size() && !retry; ++i) {
        const Node& n = g_.nodes[i];
        if (!links_[i] || n.outputs.size() != 1 || absorbed_[static_cast<size_t>(n.outputs[0])]) continue;
        if (consumers_[static_cast<size_t>(n.outputs[0])].empty() && !g_.is_graph_output(n.outputs[0])) continue;
        Chain c;
        c.end = static_cast<int>(i);
        c.links.push_back({c.end, 0});
        ValueId cur = n.inputs[links_[i]->data_input];
        while (absorbed_[static_cast<size_t>(cur)]) {
          const int p = producers_[static_cast<size_t>(cur)];
          const Node& pn = g_.nodes[static_cast<size_t>(p)];
          size_t slot = static_cast<size_t>(std::find(pn.outputs.begin(), pn.outputs.end(), cur) - pn.outputs.begin());
          c.links.insert(c.links.begin(), {p, slot});
          cur = pn.inputs[links_[static_cast<size_t>(p)]->data_input];
        }
        c.source = cur;
        c.view = contiguous_view(g_.value(cur).shape);
        bool composed = true;
        for (const auto& [node, slot] : c.links) {
          const Node& ln = g_.nodes[static_cast<size_t>(node)];
          const Link& l = *links_[static_cast<size_t>(node)];
          if (!apply_link(g_, ln, slot, c.view)) {
            // Materialise the value before this link (when it is not the source already).
            const ValueId before = ln.inputs[l.data_input];
            retry = before != c.source;
            cut_[static_cast<size_t>(before)] = true;
            composed = false;
            break;
          }
          c.kernels += l.kernel ? 1 : 0;
          if (l.scale) c.scale = l.scale;
          if (l.to) c.to = l.to;
        }
        if (composed) chains.push_back(std::move(c));
      }
      if (!retry) return chains;
    }
  }

 private:
  // absorbed_[v]: v is produced by a link (not a Mul or Cast: they end a chain), is no graph output,
  // is read only as the data input of links, and (for a Split) so are all its siblings.
  void mark_absorbed() {
    absorbed_.assign(g_.values.size(), false);
    for (size_t v = 0; v < g_.values.size(); ++v) {
      const ValueId id = static_cast<ValueId>(v);
      const int p = producers_[v];
      if (p < 0 || cut_[v] || !links_[static_cast<size_t>(p)] || links_[static_cast<size_t>(p)]->scale ||
          links_[static_cast<size_t>(p)]->to ||
          g_.is_graph_output(id) || consumers_[v].empty())
        continue;
      bool ok = true;
      for (int c : consumers_[v]) {
        const Node& cn = g_.nodes[static_cast<size_t>(c)];
        const std::optional<Link>& l = links_[static_cast<size_t>(c)];
        ok = ok && l && std::count(cn.inputs.begin(), cn.inputs.end(), id) == 1 && cn.inputs[l->data_input] == id;
      }
      absorbed_[v] = ok;
    }
    // A Split is a link only as a whole: if one part is materialised, all are (it stays a node).
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (!links_[i] || n.outputs.size() < 2) continue;
      bool all = true;
      for (ValueId o : n.outputs) all = all && absorbed_[static_cast<size_t>(o)];
      if (!all)
        for (ValueId o : n.outputs) absorbed_[static_cast<size_t>(o)] = false;
    }
  }

  const Graph& g_;
  std::vector<int> producers_;
  std::vector<std::vector<int>> consumers_;
  std::vector<std::optional<Link>> links_;
  std::vector<bool> cut_, absorbed_;
};

Node strided_copy_node(Graph& g, const Chain& c, const Node& end) {
  Node n;
  n.name = end.name;
  n.inputs = {c.source};
  n.outputs = {end.outputs[0]};
  const Shape& shape = g.value(end.outputs[0]).shape;
  const GatherView view = gather_view(c.view);
  if (!c.scale && !c.to && view_is_identity(c.view, g.value(c.source).numel())) {
    n.op_type = "Reshape";  // the chain only renames the source's elements: a view
    n.inputs.push_back(g.add_constant(g.unique_name(end.name + "_shape"),
                                      Tensor::from_int64s({static_cast<int64_t>(shape.size())}, shape)));
    return n;
  }
  n.op_type = "StridedCopy";
  n.domain = "aotc";
  n.attrs["dims"] = Attribute::of_ints(view.dims);
  n.attrs["strides"] = Attribute::of_ints(view.strides);
  n.attrs["base"] = Attribute::of_int(view.base);
  n.attrs["shape"] = Attribute::of_ints(shape);
  if (c.scale) n.attrs["scale"] = Attribute::of_float(*c.scale);
  if (c.to) n.attrs["to"] = Attribute::of_int(static_cast<int64_t>(*c.to));
  return n;
}

}  // namespace

Expected<bool> fuse_copy_chains(Graph& graph) {
  std::vector<Chain> chains = ChainFinder(graph).find();
  std::vector<bool> in_chain(graph.nodes.size(), false);
  bool changed = false;
  const OpRegistry& registry = default_registry();
  for (const Chain& c : chains) {
    const Node& end = graph.nodes[static_cast<size_t>(c.end)];
    const bool identity = !c.scale && !c.to && view_is_identity(c.view, graph.value(c.source).numel());
    if (c.kernels < 2 && !(c.kernels == 1 && identity)) continue;
    Node n = strided_copy_node(graph, c, end);
    AOTC_RETURN_IF_ERROR(registry.find(n.op_type, n.domain)->infer(n, graph));
    for (const auto& link : c.links) in_chain[static_cast<size_t>(link.first)] = true;
    graph.nodes[static_cast<size_t>(c.end)] = std::move(n);
    in_chain[static_cast<size_t>(c.end)] = false;
    changed = true;
  }
  if (!changed) return false;
  // Drop the chain links nothing reads any more (a link still read elsewhere stays).
  std::vector<int> readers(graph.values.size(), 0);
  for (const Node& n : graph.nodes)
    for (ValueId v : n.inputs)
      if (v != kNoValue) ++readers[static_cast<size_t>(v)];
  std::vector<bool> drop(graph.nodes.size(), false);
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const Node& n = graph.nodes[i];
    if (!in_chain[i]) continue;
    bool unused = true;
    for (ValueId o : n.outputs)
      unused = unused && (o == kNoValue || (readers[static_cast<size_t>(o)] == 0 && !graph.is_graph_output(o)));
    if (!unused) continue;
    drop[i] = true;
    for (ValueId v : n.inputs)
      if (v != kNoValue) --readers[static_cast<size_t>(v)];
  }
  graph.remove_nodes(drop);
  return true;
}

}  // namespace aotc
