// A readable text dump of a Graph, used by --dump-after and in tests:
//   graph main (opset 17)
//     input  %x : float[1x3x224x224]
//     const  %w : float[64x3x7x7]
//     %y : float[1x64x112x112] = Conv(%x, %w) {pads=[3,3,3,3], strides=[2,2]}  # conv1
//     output %y
#pragma once

#include <string>

#include "ir/graph.h"

namespace aotc {

std::string dump_graph(const Graph& graph);
std::string dump_node(const Node& node, const Graph& graph);

}  // namespace aotc
