// The per-op precision policy as data: which ops keep fp32 entirely (their value ranges or
// accumulations do not fit fp16/bf16 storage), which compute in fp32 internally while storing the
// low precision (the template's ACC is float for __half/__nv_bfloat16; listed so the report can say
// so), and which inputs keep their own type whatever the node computes in. Ops not listed run in
// the low precision when their shape inference accepts it (opt/precision tries it), else fp32.
#pragma once

#include <string>
#include <vector>

namespace aotc {

enum class PrecisionRule {
  kLow,            // storage and arithmetic in the low precision (accumulations still fp32)
  kComputeFp32,    // low-precision storage, fp32 arithmetic inside the kernel
  kKeepFp32,       // the node reads and writes fp32; casts at its boundary
};

struct PrecisionPolicy {
  const char* op_type;
  PrecisionRule rule;
  std::vector<int> fixed_inputs;  // inputs that keep their dtype (e.g. Resize scales)
};

// The table (opt/precision_policy.cc).
const std::vector<PrecisionPolicy>& precision_policies();
// The entry for an op, or nullptr (then: kLow when its infer accepts the low precision).
const PrecisionPolicy* find_precision_policy(const std::string& op_type);
const char* precision_rule_name(PrecisionRule rule);

}  // namespace aotc
