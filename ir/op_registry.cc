// Op registry storage and the process-wide default registry.
#include "ir/op_registry.h"

#include <cassert>

namespace aotc {

void OpRegistry::add(OpDef def) {
  auto key = std::make_pair(def.domain, def.op_type);
  assert(!defs_.count(key) && "op registered twice");
  assert(def.infer && def.reference && "an op needs infer and reference");
  defs_.emplace(key, std::move(def));
}

const OpDef* OpRegistry::find(const std::string& op_type, const std::string& domain) const {
  // "ai.onnx" is the default domain spelled out.
  std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = defs_.find(std::make_pair(d, op_type));
  return it == defs_.end() ? nullptr : &it->second;
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& kv : defs_) out.push_back(&kv.second);
  return out;
}

const OpRegistry& default_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_all_ops(r);
    return r;
  }();
  return registry;
}

}  // namespace aotc
