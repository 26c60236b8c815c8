// Broadcast strides and dim collapsing for strided templates (see strided_layout.h).
#include "ir/ops/strided_layout.h"

#include <cassert>

namespace aotc {

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  assert(in.size() <= out.size());
  std::vector<int64_t> in_strides = shape_strides(in);
  std::vector<int64_t> result(out.size(), 0);
  size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    result[offset + i] = (in[i] == 1 && out[offset + i] != 1) ? 0 : in_strides[i];
  return result;
}

StridedLayout collapse_layout(StridedLayout layout) {
  StridedLayout out;
  out.strides.resize(layout.strides.size());
  for (size_t d = 0; d < layout.dims.size(); ++d) {
    if (layout.dims[d] == 1) continue;  // contributes no offset
    bool merge = !out.dims.empty();
    // Merge dim d into the previous kept dim p when, for every operand, stepping p once equals
    // stepping d through all of its extent: stride[p] == stride[d] * dims[d].
    for (size_t k = 0; merge && k < layout.strides.size(); ++k)
      merge = out.strides[k].back() == layout.strides[k][d] * layout.dims[d];
    if (merge) {
      out.dims.back() *= layout.dims[d];
      for (size_t k = 0; k < layout.strides.size(); ++k) out.strides[k].back() = layout.strides[k][d];
    } else {
      out.dims.push_back(layout.dims[d]);
      for (size_t k = 0; k < layout.strides.size(); ++k) out.strides[k].push_back(layout.strides[k][d]);
    }
  }
  if (out.dims.empty()) {
    out.dims.push_back(1);
    for (auto& s : out.strides) s.push_back(0);
  }
  return out;
}

std::string index_type_for(int64_t max_index) {
  return max_index < (int64_t{1} << 31) - 1 ? "int" : "long long";
}

std::string bits_c_type(DType t) {
  switch (dtype_size(t)) {
    case 1: return "unsigned char";
    case 2: return "unsigned short";
    case 4: return "unsigned int";
    default: return "unsigned long long";
  }
}

}  // namespace aotc
