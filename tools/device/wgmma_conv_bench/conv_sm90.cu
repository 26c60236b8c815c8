// The standalone bench's kernel (docs/perf_notes.md v39): CUTLASS 3.x sm90 implicit-GEMM fprop,
// fp16 NHWC, bias + ReLU + residual epilogue, one configuration per inclusion (macros TM TN TK CM
// CN MINB STAGES_T KNS KNAME, from variants.py). With AOTC_HOST_PARAMS it registers its
// compile-time params builder "hk" with templates/host_params.cuh instead.
#ifdef AOTC_HOST_PARAMS
#define CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL 1
#endif
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/conv/convnd_problem_shape.hpp"
#include "cutlass/conv/kernel/conv_universal.hpp"
#include "cutlass/conv/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"

namespace KNS {
using Element = cutlass::half_t;
CUTLASS_HOST_DEVICE float act(float v) { return v > 0.f ? v : 0.f; }
template <class T> struct Act {
  CUTLASS_HOST_DEVICE T operator()(T const& v) const { return T(act(float(v))); }
};
template <class T, int N, bool R> struct Act<cutlass::Array<T, N, R>> {
  CUTLASS_HOST_DEVICE cutlass::Array<T, N, R> operator()(cutlass::Array<T, N, R> const& v) const {
    cutlass::Array<T, N, R> out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) out[i] = T(act(float(v[i])));
    return out;
  }
};
using TileShape = cute::Shape<cute::Int<TM>, cute::Int<TN>, cute::Shape<cute::Int<TK>>>;
using ClusterShape = cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>;
using Fusion = cutlass::epilogue::fusion::LinCombPerColBiasEltAct<Act, Element, float, Element, Element, float>;
using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    Element, cutlass::layout::TensorNHWC, 8, Element, cutlass::layout::TensorNHWC, 8,
    cutlass::epilogue::TmaWarpSpecialized, Fusion>::CollectiveOp;
using Main = typename cutlass::conv::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::conv::Operator::kFprop,
    Element, cutlass::layout::TensorNHWC, 8, Element, cutlass::layout::TensorNHWC, 8, float,
    TileShape, ClusterShape,
    STAGES_T,
    cutlass::conv::KernelImplicitTmaWarpSpecializedSm90>::CollectiveOp;
using Problem = cutlass::conv::ConvProblemShape<cutlass::conv::Operator::kFprop, Main::NumSpatialDimensions>;
using Kernel = cutlass::conv::kernel::ConvUniversal<Problem, Main, Epi, void>;
}  // namespace KNS

#ifndef AOTC_HOST_PARAMS
extern "C" __global__ void __launch_bounds__(KNS::Kernel::MaxThreadsPerBlock, MINB)
KNAME(const __grid_constant__ typename KNS::Kernel::Params params) {
  extern __shared__ char smem[];
  KNS::Kernel op;
  op(params, smem);
}
#else

#include "host_params.cuh"
// args: N H W C K R S pad_h pad_w pad_h_end pad_w_end stride_h stride_w dilation_h dilation_w
// y_ld has_residual. Pointer args: 0 x, 1 w, 2 bias, 3 residual (or y when absent), 4 y.
static int hk_build(const long long* a, int n, const unsigned long long* ptr, aotc_params_header* h,
                    unsigned char* out) {
  using namespace KNS;
  if (n != 17) return 1;
  using P = Problem;
  typename P::TensorExtent act{(int)a[0], (int)a[1], (int)a[2], (int)a[3]};
  typename P::TensorExtent flt{(int)a[4], (int)a[5], (int)a[6], (int)a[3]};
  const long long y_ld = a[15];
  typename P::TensorStride act_stride{a[1] * a[2] * a[3], a[2] * a[3], a[3], 1};
  typename P::TensorStride flt_stride{a[5] * a[6] * a[3], a[6] * a[3], a[3], 1};
  const long long dil_h = a[13], dil_w = a[14];
  const long long p = (a[1] + a[7] + a[9] - ((a[5] - 1) * dil_h + 1)) / a[11] + 1;
  const long long q = (a[2] + a[8] + a[10] - ((a[6] - 1) * dil_w + 1)) / a[12] + 1;
  typename P::TensorStride y_stride{p * q * y_ld, q * y_ld, y_ld, 1};
  P problem(cutlass::conv::Mode::kCrossCorrelation, act, act_stride, flt, flt_stride, y_stride,
            {(int)a[7], (int)a[8]}, {(int)a[9], (int)a[10]}, {(int)a[11], (int)a[12]}, {(int)dil_h, (int)dil_w}, 1);
  using StrideC = typename Kernel::StrideC;
  using StrideD = typename Kernel::StrideD;
  StrideC dc;
  StrideD dd;
  cute::for_each(cute::make_seq<cute::rank<0>(StrideC{})>{}, [&](auto i) {
    cute::get<0, i>(dc) = problem.stride_C[P::RankT - 2 - i];
  });
  cute::for_each(cute::make_seq<cute::rank<0>(StrideD{})>{}, [&](auto i) {
    cute::get<0, i>(dd) = problem.stride_C[P::RankT - 2 - i];
  });
  const bool has_res = a[16] != 0;
  typename Kernel::Arguments args{
      problem,
      {reinterpret_cast<Element const*>(ptr[0]), reinterpret_cast<Element const*>(ptr[1])},
      {{}, reinterpret_cast<Element const*>(has_res ? ptr[3] : ptr[4]), dc, reinterpret_cast<Element*>(ptr[4]), dd}};
  args.epilogue.thread.alpha = 1.0f;
  args.epilogue.thread.beta = has_res ? 1.0f : 0.0f;
  args.epilogue.thread.bias_ptr = reinterpret_cast<Element const*>(ptr[2]);
  if (!Kernel::can_implement(args)) return 7;
  using Params = typename Kernel::Params;
  static_assert(sizeof(Params) + AOTC_PARAMS_OFFSET <= AOTC_PARAMS_MAX_BYTES, "params too large");
  Params prm = Kernel::to_underlying_arguments(args, nullptr);
  std::memcpy(out, &prm, sizeof prm);
  dim3 g = Kernel::get_grid_shape(prm);
  h->params_bytes = (unsigned)sizeof(Params);
  h->grid[0] = g.x; h->grid[1] = g.y; h->grid[2] = g.z;
  h->block[0] = Kernel::MaxThreadsPerBlock; h->block[1] = 1; h->block[2] = 1;
  h->shared_bytes = (unsigned)Kernel::SharedStorageSize;
  h->cluster_size = CM * CN;
  return 0;
}
static aotc_host::Register hk_register("hk", &hk_build);
#endif
