// Small checks and conversions shared by the op families in ir/ops/. Each returns a node_error
// with a precise reason, so an op's infer() reads as a list of requirements.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/lowering.h"
#include "ir/status.h"

namespace aotc {

// The node has between min and max present inputs (absent trailing optionals not counted).
Status expect_inputs(const Node& node, int min_count, int max_count);
// Input `index` is present and has one of `allowed` dtypes.
Status expect_dtype(const Node& node, const Graph& graph, size_t index, const std::vector<DType>& allowed);
// The shape of input `index`, or nullptr when that optional input is absent.
const Shape* optional_input_shape(const Graph& graph, const Node& node, size_t index);
// optional_input_shape of inputs 0 .. count - 1.
std::vector<const Shape*> optional_input_shapes(const Graph& graph, const Node& node, size_t count);
// Input `index` has a dtype aotc stores (not string, not undefined); `name` names it in the
// message ("input 0" when empty).
Status expect_storable(const Node& node, const Graph& graph, size_t index, const std::string& name = "");
// Input `index` has the given rank.
Status expect_rank(const Node& node, const Graph& graph, size_t index, int64_t rank);
// Input `index` is present and constant; returns its data (nullptr + error otherwise).
Expected<const Tensor*> expect_constant(const Node& node, const Graph& graph, size_t index,
                                        const std::string& why);
// Map a possibly negative axis into [0, rank); error if out of range.
Expected<int64_t> normalize_axis(const Node& node, int64_t axis, int64_t rank);

// A norm's scale or bias of shape `s` is read as element (j % numel) of the normalized shape
// `norm`: exact when `s` is norm's trailing dims with only leading 1s (numel 1 included).
bool trailing_broadcast(const Shape& s, const Shape& norm);
// Sets output `index`'s dtype and shape and marks it known.
void set_output(Graph& graph, const Node& node, size_t index, DType dtype, Shape shape);

const Value& input_value(const Graph& graph, const Node& node, size_t index);
const Value& output_value(const Graph& graph, const Node& node, size_t index);

// Numpy-style (multidirectional) broadcast of two shapes; error names the node.
Expected<Shape> broadcast_shapes(const Node& node, const Shape& a, const Shape& b);

// Hole text for generated code: integer literals ("128LL"), float literals that round-trip
// exactly ("0x1.8p+1f" style hex floats, or "INFINITY"/"NAN").
std::string int_literal(int64_t v);
std::string float_literal(float v);
std::string dims_literal(const std::vector<int64_t>& dims);  // "{1LL, 3LL}"

// Whether `id` (following views) lives at an address fixed at create: not a graph input or
// output (the caller's pointers change per run). A TMA descriptor built at compile time holds its
// operand's address, so the CUTLASS 3.x kernels take only such operands.
bool fixed_address(const Graph& graph, ValueId id);
// Node input i's value when it is a one-element constant, `absent` when the input is absent,
// nullopt otherwise (known only at run time): the scalars a kernel may take as compile-time values.
std::optional<double> constant_scalar(const Graph& graph, const Node& node, size_t i, double absent);

// CUTLASS's element type for a 16-bit or fp32 dtype ("cutlass::half_t", "cutlass::bfloat16_t",
// "float").
std::string cutlass_element(DType t);

// The clamp of a requantized 8-bit result (int8 / uint8 `y`): the type's range, narrowed by the
// attributes qmin / qmax when `fused_activation` (the internal aotc.QLinear* ops of opt/fuse_qdq,
// where they hold a fused Relu / Clip in the quantized domain).
std::pair<int64_t, int64_t> quantized_clamp(const Node& node, DType y, bool fused_activation);

// aotc.QLinearAdd's division by sy as a corrected product with 1 / sy: the reciprocal where
// templates/int8_requant.cuh aotc_qlinear_add_rint gives the same rounded value with it as with
// the IEEE division for every pair of 8-bit inputs of types ta / tb at these scales and zero
// points (all 256 x 256 checked, ir/ops/qlinear_add.cc); nullopt where it does not, or sy or 1 / sy
// is not a normal float. For the Add's kernel and the int8 convolutions' fused residual Adds.
std::optional<float> qlinear_add_exact_reciprocal(float sa, float za, float sb, float zb, float sy, DType ta, DType tb);

// The saturation range of a quantized integer type (int8, uint8, the 16-, 4- and 2-bit integers) in
// *lo, *hi; false for the float types (rounded by small_float_encode, no range).
bool quant_range(DType t, float* lo, float* hi);

// QuantizeLinear's division x / scale of a 16-bit float x as the product x * (1 / scale): the
// reciprocal where clamp(rint(x * r) + zp, lo, hi) equals the reference's clamp(rint(x / scale) +
// zp, lo, hi) for every one of the 65536 fp16 bit patterns (NaN and infinities included; all
// checked, ir/ops/quantize.cc), else nullopt (or where scale or 1 / scale is not a normal float).
// For the stem + pool kernel's absorbed QuantizeLinear (opt/fuse_stem_quantize).
std::optional<float> fp16_quantize_reciprocal(float scale, float zp, float lo, float hi);

// aotc.QLinearAdd in integers: constants a, b, c, k with clamp(floor((a va + b vb + c) / 2^k), qmin,
// qmax) equal to clamp(aotc_qlinear_add_rint(va, vb, ...) + zy, qmin, qmax) for every pair of 8-bit
// inputs of types ta / tb (all 256 x 256 checked, ir/ops/qlinear_add.cc; every product and sum
// within int32); nullopt where no k in 8..24 with the rounded ratios (and c within +-2 of its
// rounding) gives them all - e.g. scales whose ratios make exact halves, where rint rounds to even.
// For the Add's kernel and the int8 convolutions' fused residual Adds.
struct QLinearAddFixed {
  int32_t a = 0, b = 0, c = 0;
  int k = 0;
};
std::optional<QLinearAddFixed> qlinear_add_exact_fixed(float sa, float za, float sb, float zb, float sy, int zy,
                                                       int qmin, int qmax, DType ta, DType tb);

}  // namespace aotc
