// The IR verifier: structural invariants every pass must keep. Tests call it after each pass.
// Checks: ids in range; each value produced at most once; inputs defined before use (topological
// order, no cycles); graph outputs defined; every op registered; shapes known and non-negative.
#pragma once

#include "ir/graph.h"
#include "ir/op_registry.h"

namespace aotc {

Status verify(const Graph& graph, const OpRegistry& registry = default_registry());

}  // namespace aotc
