// Reference and kernel step of the strided gather (see strided_gather.h).
#include "ir/ops/strided_gather.h"

#include <algorithm>
#include <cstring>

#include "ir/ops/elem_types.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {

void strided_gather_reference(const Tensor& x, Tensor& y, const GatherView& view) {
  const int64_t elem = dtype_size(y.dtype());
  const int64_t n = shape_numel(view.dims);
  if (n == 0) return;
  // Size-1 dims dropped and contiguous neighbours merged first (as the kernel does): the index
  // arithmetic per element is then bounded by the dims that matter, not by the rank (a fuzz find:
  // an Expand folded to 65,536 dims, mostly 1, took 14 s at import).
  const StridedLayout layout = collapse_layout(StridedLayout{view.dims, {view.strides}});
  const Shape& dims = layout.dims;
  const std::vector<int64_t>& strides = layout.strides[0];
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, src = view.base;
    for (size_t d = dims.size(); d-- > 0;) {
      src += (rest % dims[d]) * strides[d];
      rest /= dims[d];
    }
    std::memcpy(y.raw() + i * elem, x.raw() + src * elem, static_cast<size_t>(elem));
  }
}

bool scale_reference(Tensor& y, double scale) {
  if (!dtype_is_float(y.dtype())) return false;
  return visit_numeric(y.dtype(), [&](auto tag) {
    using E = decltype(tag);
    using C = typename E::Compute;
    const C s = static_cast<C>(scale);
    for (int64_t i = 0; i < y.numel(); ++i) E::store(y, i, E::load(y, i) * s);
  });
}

KernelStep strided_gather_step(ValueId in, ValueId out, DType dtype, int64_t in_numel,
                               const GatherView& view, const std::string& comment, std::optional<float> scale,
                               DType out_dtype) {
  StridedLayout layout = collapse_layout(StridedLayout{view.dims, {view.strides}});
  const int64_t numel = shape_numel(view.dims);
  KernelStep k;
  k.template_name = "strided_gather";
  // Without a scale elements move as raw bits of their width; with one, through the compute type.
  std::string value = "x";
  if (scale) {
    const std::string ct = dtype == DType::kFloat64 ? "double" : "float";
    value = "static_cast<" + dtype_c_type(dtype) + ">(static_cast<" + ct + ">(x) * static_cast<" + ct + ">(" +
            float_literal(*scale) + "))";
  }
  // A converting copy (float types only): through float (double for fp64), rounded once.
  const bool convert = out_dtype != DType::kUndefined && out_dtype != dtype;
  if (convert) {
    const std::string ct = dtype == DType::kFloat64 || out_dtype == DType::kFloat64 ? "double" : "float";
    value = "static_cast<" + dtype_c_type(out_dtype) + ">(static_cast<" + ct + ">(x))";
  }
  const std::string in_type = scale || convert ? dtype_c_type(dtype) : bits_c_type(dtype);
  // Long rows (at least one 2048-element tile, so a block's threads all work) of 16-bit elements,
  // each row start 16-byte aligned (the padded logits of pad_gemm_n):
  // 8 elements per thread, one vector load, stores staged through shared memory
  // (templates/strided_rows.cu.in).
  const bool rows = layout.dims.size() == 2 && layout.strides[0][1] == 1 && layout.strides[0][0] >= layout.dims[1] &&
                    dtype_size(dtype) == 2 && layout.dims[1] >= 2048 && view.base % 8 == 0 &&
                    layout.strides[0][0] % 8 == 0;
  if (rows) {
    k.template_name = "strided_rows";
    k.holes = {{"T", in_type},
               {"TO", convert ? dtype_c_type(out_dtype) : in_type},
               {"value", value},
               {"ROWS", int_literal(layout.dims[0])},
               {"COLS", int_literal(layout.dims[1])},
               {"ROW_STRIDE", int_literal(layout.strides[0][0])},
               {"BASE", int_literal(view.base)},
               {"comment", comment}};
    k.args = {in, out};
    k.block = Dim3{256, 1, 1};
    const int64_t tiles = layout.dims[0] * ((layout.dims[1] + 2047) / 2048);
    k.grid = Dim3{std::min<int64_t>(tiles, 65535LL * 16), 1, 1};
    return k;
  }
  k.holes = {{"T", in_type},
             {"TO", convert ? dtype_c_type(out_dtype) : in_type},
             {"value", value},
             {"I", index_type_for(std::max(numel, in_numel))},
             {"rank", std::to_string(layout.dims.size())},
             {"dims", dims_literal(layout.dims)},
             {"in_strides", dims_literal(layout.strides[0])},
             {"base", int_literal(view.base)},
             {"numel", int_literal(numel)},
             {"comment", comment}};
  k.args = {in, out};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(numel, 256);
  return k;
}

}  // namespace aotc
