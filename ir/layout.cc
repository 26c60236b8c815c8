// NHWC <-> NCHW tensor copies for the channels_last references and the layout pass's constants.
#include "ir/layout.h"

#include <cstring>

namespace aotc {

Tensor permute_channels(const Tensor& t, bool to_nchw) {
  const Shape& in = t.shape();
  if (in.size() != 4) return t;
  Tensor out(t.dtype(), to_nchw ? nhwc_to_nchw(in) : nchw_to_nhwc(in));
  const Shape& o = out.shape();
  const size_t es = static_cast<size_t>(dtype_size(t.dtype()));
  for (int64_t a = 0; a < o[0]; ++a)
    for (int64_t b = 0; b < o[1]; ++b)
      for (int64_t c = 0; c < o[2]; ++c)
        for (int64_t d = 0; d < o[3]; ++d) {
          // to_nchw: out[n][c][h][w] = in[n][h][w][c]; else out[n][h][w][c] = in[n][c][h][w]
          const int64_t src = to_nchw ? ((a * in[1] + c) * in[2] + d) * in[3] + b
                                      : ((a * in[1] + d) * in[2] + b) * in[3] + c;
          const int64_t dst = ((a * o[1] + b) * o[2] + c) * o[3] + d;
          std::memcpy(out.raw() + static_cast<size_t>(dst) * es, t.raw() + static_cast<size_t>(src) * es, es);
        }
  return out;
}

}  // namespace aotc
