// The opset in which each default-domain ONNX operator first appears (onnx 1.23.2, the version
// tools/install_deps.sh pins). A node whose op is newer than the model's opset is refused: the op
// does not exist there (e.g. Gelu in an opset-13 model), so no meaning can be given to it.
// Data, generated from onnx.defs.get_all_schemas_with_history(): per name of domain "" the
// smallest since_version, sorted by name.
#include "frontend/onnx_op_versions.h"

#include <algorithm>
#include <iterator>

namespace aotc {
namespace {

struct FirstOpset {
  const char* op;
  int64_t opset;
};

// Sorted by name (std::lower_bound below; a test checks the order).
const FirstOpset kFirstOpset[] = {
    {"Abs", 1}, {"Acos", 7}, {"Acosh", 9}, {"Add", 1}, {"AffineGrid", 20}, {"And", 1},
    {"ArgMax", 1}, {"ArgMin", 1}, {"Asin", 7}, {"Asinh", 9}, {"Atan", 7}, {"Atanh", 9},
    {"Attention", 23}, {"AveragePool", 1}, {"BatchNormalization", 1}, {"Bernoulli", 15},
    {"BitCast", 26}, {"BitShift", 11}, {"BitwiseAnd", 18}, {"BitwiseNot", 18}, {"BitwiseOr", 18},
    {"BitwiseXor", 18}, {"BlackmanWindow", 17}, {"Cast", 1}, {"CastLike", 15},
    {"CausalConvWithState", 27}, {"Ceil", 1}, {"Celu", 12}, {"CenterCropPad", 18}, {"Clip", 1},
    {"Col2Im", 18}, {"Compress", 9}, {"Concat", 1}, {"ConcatFromSequence", 11}, {"Constant", 1},
    {"ConstantOfShape", 9}, {"Conv", 1}, {"ConvInteger", 10}, {"ConvTranspose", 1}, {"Cos", 7},
    {"Cosh", 9}, {"CumProd", 26}, {"CumSum", 11}, {"DFT", 17}, {"DeformConv", 19},
    {"DepthToSpace", 1}, {"DequantizeLinear", 10}, {"Det", 11}, {"Div", 1}, {"Dropout", 1},
    {"DynamicQuantizeLinear", 11}, {"Einsum", 12}, {"Elu", 1}, {"Equal", 1}, {"Erf", 9}, {"Exp", 1},
    {"Expand", 8}, {"EyeLike", 9}, {"Flatten", 1}, {"Floor", 1}, {"GRU", 1}, {"Gather", 1},
    {"GatherElements", 11}, {"GatherND", 11}, {"Gelu", 20}, {"Gemm", 1}, {"GlobalAveragePool", 1},
    {"GlobalLpPool", 1}, {"GlobalMaxPool", 1}, {"Greater", 1}, {"GreaterOrEqual", 12},
    {"GridSample", 16}, {"GroupNormalization", 18}, {"HammingWindow", 17}, {"HannWindow", 17},
    {"HardSigmoid", 1}, {"HardSwish", 14}, {"Hardmax", 1}, {"Identity", 1}, {"If", 1},
    {"ImageDecoder", 20}, {"InstanceNormalization", 1}, {"IsInf", 10}, {"IsNaN", 9}, {"LRN", 1},
    {"LSTM", 1}, {"LayerNormalization", 17}, {"LeakyRelu", 1}, {"Less", 1}, {"LessOrEqual", 12},
    {"LinearAttention", 27}, {"Log", 1}, {"LogSoftmax", 1}, {"Loop", 1}, {"LpNormalization", 1},
    {"LpPool", 1}, {"MatMul", 1}, {"MatMulInteger", 10}, {"Max", 1}, {"MaxPool", 1},
    {"MaxRoiPool", 1}, {"MaxUnpool", 9}, {"Mean", 1}, {"MeanVarianceNormalization", 9},
    {"MelWeightMatrix", 17}, {"Min", 1}, {"Mish", 18}, {"Mod", 10}, {"Mul", 1}, {"Multinomial", 7},
    {"Neg", 1}, {"NegativeLogLikelihoodLoss", 12}, {"NonMaxSuppression", 10}, {"NonZero", 9},
    {"Not", 1}, {"OneHot", 9}, {"Optional", 15}, {"OptionalGetElement", 15},
    {"OptionalHasElement", 15}, {"Or", 1}, {"PRelu", 1}, {"Pad", 1}, {"Pow", 1},
    {"QLinearConv", 10}, {"QLinearMatMul", 10}, {"QuantizeLinear", 10}, {"RMSNormalization", 23},
    {"RNN", 1}, {"RandomNormal", 1}, {"RandomNormalLike", 1}, {"RandomUniform", 1},
    {"RandomUniformLike", 1}, {"Range", 11}, {"Reciprocal", 1}, {"ReduceL1", 1}, {"ReduceL2", 1},
    {"ReduceLogSum", 1}, {"ReduceLogSumExp", 1}, {"ReduceMax", 1}, {"ReduceMean", 1},
    {"ReduceMin", 1}, {"ReduceProd", 1}, {"ReduceSum", 1}, {"ReduceSumSquare", 1},
    {"RegexFullMatch", 20}, {"Relu", 1}, {"Reshape", 1}, {"Resize", 10}, {"ReverseSequence", 10},
    {"RoiAlign", 10}, {"RotaryEmbedding", 23}, {"Round", 11}, {"STFT", 17}, {"Scan", 8},
    {"Scatter", 9}, {"ScatterElements", 11}, {"ScatterND", 11}, {"Selu", 1}, {"SequenceAt", 11},
    {"SequenceConstruct", 11}, {"SequenceEmpty", 11}, {"SequenceErase", 11}, {"SequenceInsert", 11},
    {"SequenceLength", 11}, {"SequenceMap", 17}, {"Shape", 1}, {"Shrink", 9}, {"Sigmoid", 1},
    {"Sign", 9}, {"Sin", 7}, {"Sinh", 9}, {"Size", 1}, {"Slice", 1}, {"Softmax", 1},
    {"SoftmaxCrossEntropyLoss", 12}, {"Softplus", 1}, {"Softsign", 1}, {"SpaceToDepth", 1},
    {"Split", 1}, {"SplitToSequence", 11}, {"Sqrt", 1}, {"Squeeze", 1}, {"StringConcat", 20},
    {"StringNormalizer", 10}, {"StringSplit", 20}, {"Sub", 1}, {"Sum", 1}, {"SwiGLU", 28},
    {"Swish", 24}, {"Tan", 7}, {"Tanh", 1}, {"TensorScatter", 24}, {"TfIdfVectorizer", 9},
    {"ThresholdedRelu", 10}, {"Tile", 1}, {"TopK", 1}, {"Transpose", 1}, {"Trilu", 14},
    {"Unique", 11}, {"Unsqueeze", 1}, {"Upsample", 1}, {"Where", 9}, {"Xor", 1},
};

}  // namespace

int64_t onnx_op_first_opset(const std::string& op_type) {
  auto it = std::lower_bound(std::begin(kFirstOpset), std::end(kFirstOpset), op_type,
                             [](const FirstOpset& e, const std::string& name) { return name.compare(e.op) > 0; });
  return it != std::end(kFirstOpset) && op_type == it->op ? it->opset : 0;
}

}  // namespace aotc
