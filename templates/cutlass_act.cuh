// templates/cutlass_act.cuh: the activation functor of the CUTLASS 3.x epilogue visitor trees
// (templates/cutlass_conv2d_fprop_sm90.cu.in, cutlass_gemm_sm90.cu.in), from one scalar function.
// A template defines `struct ActFn { CUTLASS_HOST_DEVICE static float apply(float v); }` (its
// activation expression, in fp32) and `template <class T> using Act = aotc_cutlass::ActOf<ActFn, T>;`,
// which the fusion operation (e.g. LinCombPerColBiasEltAct<Act, ...>) calls on one value or on a
// fragment.
#pragma once
#include "cutlass/cutlass.h"
#include "cutlass/array.h"

namespace aotc_cutlass {

template <class Fn, class T>
struct ActOf {
  CUTLASS_HOST_DEVICE T operator()(T const& v) const { return T(Fn::apply(float(v))); }
};

template <class Fn, class T, int N, bool R>
struct ActOf<Fn, cutlass::Array<T, N, R>> {
  CUTLASS_HOST_DEVICE cutlass::Array<T, N, R> operator()(cutlass::Array<T, N, R> const& v) const {
    cutlass::Array<T, N, R> out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) out[i] = T(Fn::apply(float(v[i])));
    return out;
  }
};

}  // namespace aotc_cutlass
