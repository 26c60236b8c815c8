// A small textual IR, close to ir/dump.cc's format, so pass tests read as before/after graphs
// instead of C++ graph-building code. Parsing only: call infer_shapes() afterwards to fill
// output shapes written as "?".
//
//   graph g (opset 17)                                # optional header
//   input  %x : float[1x3x8x8]
//   const  %w : float[4x3x3x3] = random(1)            # seeded uniform [-1, 1)
//   const  %v : float[4] = random(2, 0.5, 2)          # seeded uniform [lo, hi)
//   const  %s : int64[2] = [1, -1]                    # literal list (row-major)
//   const  %z : float[scalar] = [0.5]                 # rank 0: "scalar" or "[]" as the shape
//   %y : float[?] = Conv(%x, %w, _) {pads=[1,1,1,1], strides=[1,1]}  # conv1
//   %a : float[?], %b : float[?] = aotc.Op(%y)        # several outputs; "dom.Op" sets the domain
//   output %y
//
// After a node, "# text" is the node's name (as dump_node prints it); elsewhere "#" starts a
// comment. "_" is an absent input. Attribute values: 3 (int), 0.5 / 1e-5 (float), "s" (string),
// [1,2] (ints), [0.5,1.0] (floats: any element with '.', 'e' or inf/nan makes the list floats).
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/status.h"

namespace aotc {

// Errors name the line number and what was expected.
Expected<Graph> parse_text_ir(const std::string& text);

// The data random(seed, lo, hi) produces: deterministic across platforms (own generator, not
// <random> distributions). Integer dtypes get uniform integers in [floor(lo), floor(hi)); in the
// text, random(seed) without bounds means [-1, 1) for floats and [0, 10) for integers; bool gets
// 0/1.
Tensor seeded_random_tensor(DType dtype, const Shape& shape, uint64_t seed, double lo = -1.0,
                            double hi = 1.0);

}  // namespace aotc
