// The precision policy table (see precision_policy.h). Keep-fp32 ops: exponentials and powers
// overflow fp16's 65504 easily, sums and products of many elements exceed its range, and the
// integer-valued or index-producing float ops are better left exact.
#include "opt/precision_policy.h"

namespace aotc {

const std::vector<PrecisionPolicy>& precision_policies() {
  static const std::vector<PrecisionPolicy> kTable = {
      // fp32 storage and arithmetic.
      {"Exp", PrecisionRule::kKeepFp32, {}},
      {"Pow", PrecisionRule::kKeepFp32, {}},
      {"ReduceSum", PrecisionRule::kKeepFp32, {}},
      {"ReduceSumSquare", PrecisionRule::kKeepFp32, {}},
      {"ReduceProd", PrecisionRule::kKeepFp32, {}},
      {"ReduceLogSumExp", PrecisionRule::kKeepFp32, {}},
      {"CumSum", PrecisionRule::kKeepFp32, {}},
      {"Range", PrecisionRule::kKeepFp32, {}},
      {"Det", PrecisionRule::kKeepFp32, {}},
      {"DFT", PrecisionRule::kKeepFp32, {}},
      {"STFT", PrecisionRule::kKeepFp32, {}},
      {"RNN", PrecisionRule::kKeepFp32, {}},
      {"GRU", PrecisionRule::kKeepFp32, {}},
      {"LSTM", PrecisionRule::kKeepFp32, {}},
      {"TopK", PrecisionRule::kKeepFp32, {}},
      {"NegativeLogLikelihoodLoss", PrecisionRule::kKeepFp32, {}},
      {"SoftmaxCrossEntropyLoss", PrecisionRule::kKeepFp32, {}},
      // Quantization: the scales stay fp32 (an fp16 scale is off by up to 2^-11, a requantization
      // multiplier through fp16 moves whole steps), so the float side of a quantized layer is fp32
      // and casts sit where it meets the low-precision rest (--precision int8 runs that in fp16).
      {"QuantizeLinear", PrecisionRule::kKeepFp32, {}},
      {"DequantizeLinear", PrecisionRule::kKeepFp32, {}},
      {"QLinearConv", PrecisionRule::kKeepFp32, {}},
      {"QLinearMatMul", PrecisionRule::kKeepFp32, {}},
      {"QLinearAdd", PrecisionRule::kKeepFp32, {}},
      // Low-precision storage, fp32 statistics / accumulation inside the kernel.
      {"Softmax", PrecisionRule::kComputeFp32, {}},
      {"LogSoftmax", PrecisionRule::kComputeFp32, {}},
      {"LayerNormalization", PrecisionRule::kComputeFp32, {}},
      {"RMSNormalization", PrecisionRule::kComputeFp32, {}},
      {"SwiGLU", PrecisionRule::kComputeFp32, {}},  // exp of the gate
      // attn_mask keeps its type: an fp32 additive mask of -3.4e38 (torch.finfo.min) would round
      // to -inf in fp16 and turn "very unlikely" into "disallowed" (a fully masked row then
      // outputs zeros instead of the uniform average); the kernel reads any mask type.
      {"Attention", PrecisionRule::kComputeFp32, {3}},
      {"InstanceNormalization", PrecisionRule::kComputeFp32, {}},
      {"BatchNormalization", PrecisionRule::kComputeFp32, {}},
      {"ReduceMean", PrecisionRule::kComputeFp32, {}},
      {"ReduceL1", PrecisionRule::kComputeFp32, {}},
      {"ReduceL2", PrecisionRule::kComputeFp32, {}},
      {"GlobalAveragePool", PrecisionRule::kComputeFp32, {}},
      {"AveragePool", PrecisionRule::kComputeFp32, {}},
      {"Conv", PrecisionRule::kComputeFp32, {}},
      {"FusedConv", PrecisionRule::kComputeFp32, {}},
      {"Gemm", PrecisionRule::kComputeFp32, {}},
      {"FusedGemm", PrecisionRule::kComputeFp32, {}},
      {"MatMul", PrecisionRule::kComputeFp32, {}},
      {"MatMulT", PrecisionRule::kComputeFp32, {}},
      // Inputs that keep their type whatever the node computes in.
      {"Resize", PrecisionRule::kLow, {1, 2}},
  };
  return kTable;
}

const PrecisionPolicy* find_precision_policy(const std::string& op_type) {
  for (const PrecisionPolicy& p : precision_policies())
    if (op_type == p.op_type) return &p;
  return nullptr;
}

const char* precision_rule_name(PrecisionRule rule) {
  switch (rule) {
    case PrecisionRule::kLow: return "low";
    case PrecisionRule::kComputeFp32: return "low storage, fp32 compute";
    case PrecisionRule::kKeepFp32: return "fp32";
  }
  return "?";
}

}  // namespace aotc
