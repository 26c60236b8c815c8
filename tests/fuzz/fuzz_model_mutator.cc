// libFuzzer harness with a structure-aware mutator: inputs are serialized ModelProtos, and
// LLVMFuzzerCustomMutator parses one, changes its fields the way a broken exporter or a hostile
// author would (dims, dtypes, attribute values and types, node input/output names, op types,
// opsets, initializer data and dims, dropped / duplicated / swapped nodes, graph outputs), and
// serializes it again. Byte-level mutation would mostly break the protobuf and stop at the
// parser; these inputs stay valid protobufs and reach import, shape inference, the optimisation
// passes (verify() after each), the memory plan and codegen up to the rendered source (no nvcc).
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/op_registry.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using Rng = std::minstd_rand;
constexpr const char* kPrecisionKey = "aotc.fuzz.precision";  // metadata_props: fp32 / fp16 / bf16

size_t pick(Rng& r, size_t n) { return n == 0 ? 0 : static_cast<size_t>(r() % n); }
bool one_in(Rng& r, unsigned n) { return r() % n == 0; }

int64_t interesting_int(Rng& r) {
  static const int64_t k[] = {0, 1, -1, 2, -2, 3, 4, 7, 8, 16, 31, 64, 255, 4096, 65536, INT32_MAX,
                              int64_t{1} << 31, int64_t{1} << 40, int64_t{1} << 62, INT64_MAX, INT64_MIN};
  if (one_in(r, 3)) return static_cast<int64_t>(pick(r, 20)) - 4;
  return k[pick(r, sizeof(k) / sizeof(k[0]))];
}

float interesting_float(Rng& r) {
  static const float k[] = {0.f, -0.f, 1.f, -1.f, 0.5f, 2.f, 1e-30f, 1e30f, FLT_MAX, -FLT_MAX, FLT_MIN / 4,
                            NAN, INFINITY, -INFINITY, 1e-5f, 6.f};
  return k[pick(r, sizeof(k) / sizeof(k[0]))];
}

// Element types: every ONNX code up to 26, plus 0, negative and unknown ones.
int32_t random_elem_type(Rng& r) {
  if (one_in(r, 8)) return one_in(r, 2) ? -1 : 99;
  return static_cast<int32_t>(pick(r, 27));
}

std::string interesting_string(Rng& r) {
  static const char* k[] = {"", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "nearest", "linear", "cubic",
                            "half_pixel", "asymmetric", "ij,jk->ik", "...ii->...i", "bij,bjk->bik", "forward",
                            "reverse", "bidirectional", "DCR", "CRD", "constant", "reflect", "edge", "tanh",
                            "none", "ai.onnx", "aotc", "com.microsoft"};
  return k[pick(r, sizeof(k) / sizeof(k[0]))];
}

// Names of values a node may read: initializers, graph inputs and every node output.
std::vector<std::string> value_names(const onnx::GraphProto& g) {
  std::vector<std::string> names;
  for (const auto& t : g.initializer()) names.push_back(t.name());
  for (const auto& v : g.input()) names.push_back(v.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) names.push_back(o);
  return names;
}

const std::vector<std::string>& op_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> t;
    for (const aotc::OpDef* def : aotc::default_registry().all())
      if (def->domain.empty()) t.push_back(def->op_type);
    for (const char* other : {"If", "Loop", "Scan", "NoSuchOp", "Constant"}) t.push_back(other);
    return t;
  }();
  return types;
}

void mutate_dims(google::protobuf::RepeatedField<int64_t>* dims, Rng& r) {
  switch (pick(r, 4)) {
    case 0:
      if (dims->size() > 0) dims->Set(static_cast<int>(pick(r, dims->size())), interesting_int(r));
      break;
    case 1: dims->Add(static_cast<int64_t>(pick(r, 9))); break;
    case 2:
      if (dims->size() > 0) dims->RemoveLast();
      break;
    default:
      if (dims->size() > 1) dims->SwapElements(0, dims->size() - 1);
      break;
  }
}

void mutate_tensor(onnx::TensorProto* t, Rng& r) {
  switch (pick(r, 7)) {
    case 0: mutate_dims(t->mutable_dims(), r); break;
    case 1: t->set_data_type(random_elem_type(r)); break;
    case 2: {  // data shorter or longer than the dims say
      std::string* raw = t->mutable_raw_data();
      raw->resize(one_in(r, 2) && !raw->empty() ? pick(r, raw->size()) : raw->size() + 1 + pick(r, 64), '\x7f');
      break;
    }
    case 3: {  // the bytes themselves, through libFuzzer's own byte mutator
      std::string* raw = t->mutable_raw_data();
      size_t max = raw->size() + 16;
      raw->resize(max);
      size_t n = LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(raw->data()), max - 16, max);
      raw->resize(n);
      break;
    }
    case 4:  // typed fields instead of (or besides) raw_data
      for (size_t i = 0, n = 1 + pick(r, 8); i < n; ++i) {
        t->add_float_data(interesting_float(r));
        t->add_int64_data(interesting_int(r));
        t->add_int32_data(static_cast<int32_t>(interesting_int(r)));
      }
      if (one_in(r, 2)) t->clear_raw_data();
      break;
    case 5: t->clear_raw_data(); break;
    default: {  // claims external data (the scratch folder is empty)
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      auto* e = t->add_external_data();
      e->set_key(one_in(r, 4) ? "offset" : "location");
      e->set_value(one_in(r, 2) ? "w.bin" : "../w.bin");
      break;
    }
  }
}

void mutate_attribute(onnx::AttributeProto* a, Rng& r) {
  switch (pick(r, 9)) {
    case 0: a->set_i(interesting_int(r)); break;
    case 1: a->set_f(interesting_float(r)); break;
    case 2:
      if (a->ints_size() > 0 && !one_in(r, 4)) a->set_ints(static_cast<int>(pick(r, a->ints_size())), interesting_int(r));
      else if (one_in(r, 2) && a->ints_size() > 0) a->mutable_ints()->RemoveLast();
      else a->add_ints(interesting_int(r));
      break;
    case 3:
      if (a->floats_size() > 0) a->set_floats(static_cast<int>(pick(r, a->floats_size())), interesting_float(r));
      else a->add_floats(interesting_float(r));
      break;
    case 4: a->set_s(interesting_string(r)); break;
    case 5: a->set_type(static_cast<onnx::AttributeProto::AttributeType>(pick(r, 15))); break;
    case 6: mutate_tensor(a->mutable_t(), r); break;
    case 7: {  // another type's payload, keeping the declared type
      a->clear_i(); a->clear_ints(); a->clear_f(); a->clear_floats(); a->clear_s();
      if (one_in(r, 2)) a->add_ints(interesting_int(r)); else a->set_f(interesting_float(r));
      break;
    }
    default: a->set_name(one_in(r, 2) ? "" : "axis"); break;
  }
}

void add_attribute(onnx::NodeProto* n, Rng& r) {
  static const char* names[] = {"axis", "axes", "perm", "pads", "strides", "kernel_shape", "dilations", "group",
                                "keepdims", "to", "epsilon", "alpha", "beta", "transA", "transB", "mode", "value",
                                "starts", "ends", "split", "num_outputs", "auto_pad", "ceil_mode", "direction",
                                "hidden_size", "equation", "k", "batch_dims", "blocksize", "allowzero",
                                "output_padding", "output_shape", "exclusive", "reverse", "noop_with_empty_axes"};
  auto* a = n->add_attribute();
  a->set_name(names[pick(r, sizeof(names) / sizeof(names[0]))]);
  switch (pick(r, 4)) {
    case 0: a->set_type(onnx::AttributeProto::INT); a->set_i(interesting_int(r)); break;
    case 1:
      a->set_type(onnx::AttributeProto::INTS);
      for (size_t i = 0, k = pick(r, 7); i < k; ++i) a->add_ints(interesting_int(r));
      break;
    case 2: a->set_type(onnx::AttributeProto::FLOAT); a->set_f(interesting_float(r)); break;
    default: a->set_type(onnx::AttributeProto::STRING); a->set_s(interesting_string(r)); break;
  }
}

onnx::TypeProto_Tensor* some_tensor_type(onnx::GraphProto* g, Rng& r) {
  const int total = g->input_size() + g->output_size() + g->value_info_size();
  if (total == 0) return nullptr;
  int i = static_cast<int>(pick(r, static_cast<size_t>(total)));
  onnx::ValueInfoProto* v = i < g->input_size() ? g->mutable_input(i)
                            : i < g->input_size() + g->output_size() ? g->mutable_output(i - g->input_size())
                                                                     : g->mutable_value_info(i - g->input_size() - g->output_size());
  return v->mutable_type()->mutable_tensor_type();
}

// One field-level change; returns false when the model had nothing of the chosen kind.
bool mutate_once(onnx::ModelProto& m, Rng& r) {
  onnx::GraphProto* g = m.mutable_graph();
  onnx::NodeProto* node = g->node_size() > 0 ? g->mutable_node(static_cast<int>(pick(r, g->node_size()))) : nullptr;
  switch (pick(r, 17)) {
    case 0: {  // a declared dim
      auto* t = some_tensor_type(g, r);
      if (!t) return false;
      auto* shape = t->mutable_shape();
      if (shape->dim_size() == 0 || one_in(r, 6)) {
        shape->add_dim()->set_dim_value(interesting_int(r));
      } else {
        auto* d = shape->mutable_dim(static_cast<int>(pick(r, shape->dim_size())));
        if (one_in(r, 4)) d->set_dim_param("N"); else d->set_dim_value(interesting_int(r));
      }
      return true;
    }
    case 1: {  // a declared element type
      auto* t = some_tensor_type(g, r);
      if (!t) return false;
      t->set_elem_type(random_elem_type(r));
      return true;
    }
    case 2:
    case 3:
      if (!node || node->attribute_size() == 0) return false;
      mutate_attribute(node->mutable_attribute(static_cast<int>(pick(r, node->attribute_size()))), r);
      return true;
    case 4:
      if (!node) return false;
      if (node->attribute_size() > 0 && one_in(r, 2)) {
        node->mutable_attribute()->SwapElements(static_cast<int>(pick(r, node->attribute_size())),
                                                node->attribute_size() - 1);
        node->mutable_attribute()->RemoveLast();
      } else {
        add_attribute(node, r);
      }
      return true;
    case 5: {  // a node input: another value, empty (absent optional), or one more / one fewer
      if (!node) return false;
      std::vector<std::string> names = value_names(*g);
      const std::string name = names.empty() || one_in(r, 8) ? std::string() : names[pick(r, names.size())];
      if (node->input_size() == 0 || one_in(r, 5)) node->add_input(name);
      else if (one_in(r, 5)) node->mutable_input()->RemoveLast();
      else node->set_input(static_cast<int>(pick(r, node->input_size())), name);
      return true;
    }
    case 6: {  // a node output: renamed, emptied, another node's name, or one more
      if (!node) return false;
      std::vector<std::string> names = value_names(*g);
      std::string name = one_in(r, 4) ? std::string() : one_in(r, 2) && !names.empty() ? names[pick(r, names.size())]
                                                                                        : "fuzz_" + std::to_string(r() % 100);
      if (node->output_size() == 0 || one_in(r, 5)) node->add_output(name);
      else node->set_output(static_cast<int>(pick(r, node->output_size())), name);
      return true;
    }
    case 7:
      if (!node) return false;
      node->set_op_type(op_types()[pick(r, op_types().size())]);
      return true;
    case 8:
      if (!node) return false;
      node->set_domain(one_in(r, 2) ? "" : interesting_string(r));
      return true;
    case 9: {  // the opset
      auto* op = m.opset_import_size() > 0 ? m.mutable_opset_import(0) : m.add_opset_import();
      op->set_version(one_in(r, 3) ? interesting_int(r) : static_cast<int64_t>(1 + pick(r, 28)));
      return true;
    }
    case 10:
    case 11:
      if (g->initializer_size() == 0) return false;
      mutate_tensor(g->mutable_initializer(static_cast<int>(pick(r, g->initializer_size()))), r);
      return true;
    case 12:  // drop a node
      if (!node) return false;
      g->mutable_node()->SwapElements(static_cast<int>(pick(r, g->node_size())), g->node_size() - 1);
      g->mutable_node()->RemoveLast();
      return true;
    case 13:  // duplicate a node, at the end or next to itself
      if (!node) return false;
      *g->add_node() = *node;
      if (one_in(r, 2)) g->mutable_node()->SwapElements(g->node_size() - 1, static_cast<int>(pick(r, g->node_size())));
      return true;
    case 14:  // swap two nodes (order matters: ONNX is topologically sorted)
      if (g->node_size() < 2) return false;
      g->mutable_node()->SwapElements(static_cast<int>(pick(r, g->node_size())), static_cast<int>(pick(r, g->node_size())));
      return true;
    case 15: {  // graph outputs: drop one, or expose an internal value
      std::vector<std::string> names = value_names(*g);
      if (g->output_size() > 0 && one_in(r, 2)) {
        g->mutable_output()->SwapElements(static_cast<int>(pick(r, g->output_size())), g->output_size() - 1);
        g->mutable_output()->RemoveLast();
      } else if (!names.empty()) {
        g->add_output()->set_name(names[pick(r, names.size())]);
      }
      return true;
    }
    default: {  // the compile's precision
      static const char* precisions[] = {"fp32", "fp16", "bf16"};
      for (auto& p : *m.mutable_metadata_props())
        if (p.key() == kPrecisionKey) {
          p.set_value(precisions[pick(r, 3)]);
          return true;
        }
      auto* p = m.add_metadata_props();
      p->set_key(kPrecisionKey);
      p->set_value(precisions[pick(r, 3)]);
      return true;
    }
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  Rng r(seed);
  onnx::ModelProto model;
  // Unparseable inputs (and now and then parseable ones) get libFuzzer's byte mutations: the
  // parser and the limits on the raw protobuf are fuzzed too, and a broken model may turn valid.
  if (one_in(r, 16) || !model.ParseFromArray(data, static_cast<int>(size)))
    return LLVMFuzzerMutate(data, size, max_size);
  int changes = 1 + static_cast<int>(pick(r, 3));
  for (int tries = 0; changes > 0 && tries < 20; ++tries)
    if (mutate_once(model, r)) --changes;
  std::string out;
  if (!model.SerializeToString(&out) || out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aotc;
  static const std::string& dir = fuzz::scratch_dir("mutator");
  static const ImportOptions options = fuzz::import_options();
  Expected<Graph> graph = load_onnx_model_from_memory(data, size, dir, options);
  if (!graph) {
    fuzz::require_proper_error(graph.status(), "load");
    return 0;
  }
  // The precision the mutator chose (metadata the CLI ignores); fp32 when absent.
  std::string precision = "fp32";
  onnx::ModelProto model;
  if (model.ParseFromArray(data, static_cast<int>(size)))
    for (const auto& p : model.metadata_props())
      if (p.key() == kPrecisionKey) precision = p.value();
  fuzz::require_proper_error(fuzz::compile_to_source(*graph, precision), "compile");
  return 0;
}
