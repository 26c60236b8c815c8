#!/usr/bin/env python3
"""Variants of the stem + max-pool kernel (ResNet-50's 7x7/2 + 3x3/2, fp16) in one benchmark:
the template before this session's change (old), the first staged-filter version (v1), and the
current template with tiles per block, and ablations of it (_nomma, _nofilter, _nopool, _nopatch,
_none, _noepi: the named phase's loop runs zero times; outputs then differ) next to an empty kernel
of the same launch shape (the event-timing floor, ~5 us), and packed_* (the model's configuration:
the NCHW fp32 input read and padded by the kernel, 5 tiles a block) whole and without a phase.
The prelude is templates/common.cuh;
old / v1 are the template at 4bb370b / d3f6697 (git show). Writes bench.cu
(ignored); build it here and run the binary on the GPU machine (it travels if not ignored):
  python3 gen.py && nvcc -O3 -arch=sm_90a -std=c++17 bench.cu -o stem_bench.bin
Each variant's output is compared with old's (max abs difference) and timed with CUDA events
(median of 30). Figures: docs/perf_notes.md v12."""
import re
import subprocess
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
repo = here.parents[2]


def render(text, holes):
    def sub(m):
        return str(holes[m.group(1)])
    return re.sub(r"\{\{(\w+)\}\}", sub, text)


def template_at(commit):
    """The stem + pool template as it was at `commit` (the baselines), from git."""
    return subprocess.run(["git", "-C", str(repo), "show", f"{commit}:templates/conv_stem_pool_nhwc.cu.in"],
                          check=True, capture_output=True, text=True).stdout


def geometry(n):
    pth = 4 if n > 1 else 2
    cr, cc = (pth - 1) * 2 + 3, (8 - 1) * 2 + 3
    threads = (cr * cc + 31) // 32 * 32
    return pth, threads


def holes(n, name):
    pth, threads = geometry(n)
    return dict(comment=name, T="__half", IDX="int", MMA_TYPE="f16", N=n, H=224, W=224, C=4, K=64, KH=7, KW=7,
                OH=112, OW=112, SH=2, SW=2, PH=3, PW=3, PKH=3, PKW=3, PSH=2, PSW=2, PPH=1, PPW=1, POH=56, POW=56,
                PTH=pth, PTW=8, TILES_W=7, THREADS=threads, HAS_BIAS=1, act_expr="(v < 0 ? 0 : v)",
                kernel_name=name, WRS=104, TPB=1, T2="__half2", TI="__half", PACKED=0, CI=4)


def smem_bytes(pth):
    """Dynamic shared memory of the stem + pool kernel: filter rows, input window, conv tile."""
    cr, cc = (pth - 1) * 2 + 3, (8 - 1) * 2 + 3
    pr, pc = (cr - 1) * 2 + 7, (cc - 1) * 2 + 7
    return 64 * 104 * 4 + (pr * pc * 8 + 15) // 16 * 16 + cr * cc * 72 * 2


def ablated(cur, h, reps, unroll=None):
    """The current template rendered with `h`, 3 blocks a SM asked for, each (a, b) of reps applied."""
    t = re.sub(r"__launch_bounds__\((\d+), \d\)", "__launch_bounds__(\\1, 3)", render(cur, h))
    if unroll:
        t = re.sub(r"#pragma unroll[^\n]*\n(\s+for \(IDX ks = 0)", f"#pragma unroll {unroll}\n\\1", t)
    for a, b in reps:
        assert a in t, a
        t = t.replace(a, b)
    return t


def main():
    # The libraries' device prelude; its exported aotc_pdl_arch (read by the runtime through the
    # driver) is a plain __device__ variable here, where the runtime API links the program.
    prelude = (repo / "templates/common.cuh").read_text()
    out = [prelude.replace('extern "C" __device__ int aotc_pdl_arch', "__device__ int aotc_pdl_arch")]
    launches = []  # (name, n, grid, threads, smem)
    cur = (repo / "templates/conv_stem_pool_nhwc.cu.in").read_text()
    for n in (32, 1):
        pth, threads = geometry(n)
        tiles = n * ((56 + pth - 1) // pth) * 7
        for tag, commit in (("old", "4bb370b"), ("v1", "d3f6697")):
            name = f"{tag}_n{n}"
            out.append(render(template_at(commit), holes(n, name)))
            launches.append((name, n, f"dim3({tiles // n}, {n})", threads, 0))
        ablations = {"": [], "_nomma": [("ks < KSTEPS; ++ks", "ks < 0; ++ks")],
                     "_nofilter": [("i < K_ * KSTEPS * 4; i +=", "i < 0; i +=")],
                     "_nopool": [("i < PTH * PTW * (K_ / 8); i +=", "i < 0; i +=")],
                     "_nopatch": [("i < PR * PC; i +=", "i < 0; i +=")]}
        ablations["_none"] = [r for v in ablations.values() for r in v]
        ablations["_noepi"] = ablations["_none"] + [("if (q >= CPX) continue;", "continue;")]
        for suffix, reps in ablations.items():
            tpb = 4 if n > 1 else 1
            name = f"abl_n{n}_t{tpb}{suffix}"
            h = holes(n, name)
            h["TPB"] = tpb
            out.append(ablated(cur, h, reps, unroll=2))
            launches.append((name, n, f"dim3({(tiles + tpb - 1) // tpb})", threads, smem_bytes(pth)))
        # The model's configuration since the pack was absorbed (PACKED: the kernel reads the
        # NCHW fp32 input, 3 channels, and pads it to 4 itself), whole and with phases left out.
        # Its input is the same buffer read as floats (x is allocated large enough): its outputs
        # are not compared, only timed.
        if n > 1:
            for suffix, reps in (("", []), ("_nopatch", ablations["_nopatch"]), ("_nomma", ablations["_nomma"]),
                                 ("_nopool", ablations["_nopool"]), ("_noepi", ablations["_noepi"])):
                name = f"packed_n{n}_t5{suffix}"
                h = holes(n, name)
                h.update(TPB=5, TI="float", PACKED=1, CI=3)
                out.append(ablated(cur, h, reps))
                launches.append((name, n, f"dim3({(tiles + 4) // 5})", threads, smem_bytes(pth), "packed"))
        # The wgmma kernel (templates/conv_stem_pool_wgmma_nhwc.cu.in) as the library renders it:
        # pooled tiles of 8 x 7 (conv tile 17 x 15 = 255 pixels, two warpgroups of 2 x 64 rows) and,
        # at batch 1, 5 x 5 (121 conv pixels on 2 x 64 rows: 144 blocks for 132 SMs instead of 56);
        # 4-channel input (compared with old) and packed. (The twenty-fourth session's variants with
        # two A register sets or partial unrolling are in docs/perf_notes.md v42.)
        wg_src = (repo / "templates/conv_stem_pool_wgmma_nhwc.cu.in").read_text()
        if True:
            for (pth_w, ptw_w, mf, threads_w, minb) in ((8, 7, 2, 256, 2),) + (((5, 5, 1, 256, 2),) if n == 1 else ()):
                cr, cc = 2 * pth_w + 1, 2 * ptw_w + 1
                pr, pc = (cr - 1) * 2 + 7, (cc - 1) * 2 + 8  # the window covers the 8th (padding) tap column
                smem_w = 2 * 14 * 64 * 16 + (pr * pc * 8 + 15) // 16 * 16 + threads_w // 128 * mf * 64 * 72 * 2
                tiles_w_ = (56 + ptw_w - 1) // ptw_w
                tiles_n = n * ((56 + pth_w - 1) // pth_w) * tiles_w_
                for tpb in ((7,) if n > 1 else (1,)):
                    for packed in (False, True):
                        for suffix, reps in (("", []), ("_nomma", [("ks < KSTEPS; ++ks", "ks < 0; ++ks")])):
                            if suffix and (tpb != 7 or not packed or n == 1):
                                continue
                            name = f"wg{pth_w}x{ptw_w}_b{minb}_n{n}_t{tpb}" + ("_packed" if packed else "") + suffix
                            h = holes(n, name)
                            h.update(PTH=pth_w, PTW=ptw_w, TILES_W=tiles_w_, THREADS=threads_w, MF=mf, MIN_BLOCKS=minb, TPB=tpb)
                            smem_v = smem_w + (pr * pc * 12 if packed else pr * pc * 8)
                            h["SMEM_BYTES"] = smem_v
                            if packed:
                                h.update(TI="float", PACKED=1, CI=3)
                            t = render(wg_src, h)
                            for a, b in reps:
                                assert a in t, a
                                t = t.replace(a, b)
                            out.append(t)
                            launches.append((name, n, f"dim3({(tiles_n + tpb - 1) // tpb})", threads_w, smem_v) +
                                            (("packed",) if packed else ()))
        out.append(f"extern \"C\" __global__ void empty_n{n}(const __half*, const __half*, const __half*, __half*) {{}}\n")
        out.append(f"extern \"C\" __global__ void empty_n{n}_nosmem(const __half*, const __half*, const __half*, __half*) {{}}\n")
        launches.append((f"empty_n{n}", n, f"dim3({(tiles + (4 if n > 1 else 1) - 1) // (4 if n > 1 else 1)})", threads, 55000))
        launches.append((f"empty_n{n}_nosmem", n, f"dim3({(tiles + (4 if n > 1 else 1) - 1) // (4 if n > 1 else 1)})", threads, 0))
        for minb in (3,):
            for unroll in (2,):
                for tpb in ((2, 4, 8) if n > 1 else (1,)):
                    name = f"new_n{n}_mb{minb}_u{unroll}_t{tpb}"
                    h = holes(n, name)
                    h["TPB"] = tpb
                    t = render(cur, h)
                    t = re.sub(r"__launch_bounds__\((\d+), \d\)", f"__launch_bounds__(\\1, {minb})", t)
                    t = re.sub(r"#pragma unroll[^\n]*\n(\s+for \(IDX ks = 0)", f"#pragma unroll {unroll}\n\\1", t)
                    out.append(t)
                    launches.append((name, n, f"dim3({(tiles + tpb - 1) // tpb})", threads, smem_bytes(pth)))
    out.append(r"""
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cmath>
static void check(cudaError_t e, const char* what) { if (e != cudaSuccess) { printf("%s: %s\n", what, cudaGetErrorString(e)); exit(1); } }
int main() {
  const size_t xn = 32ull * 224 * 224 * 4, wn = 64 * 49 * 4, yn = 32ull * 56 * 56 * 64;
  const size_t x_bytes = 32ull * 3 * 224 * 224 * 4;  // room for the packed variants' fp32 NCHW input
  std::vector<__half> hx(xn), hw(wn), hb(64);
  unsigned s = 1;
  auto rnd = [&]() { s = s * 1664525u + 1013904223u; return ((s >> 8) & 0xffff) / 32768.0f - 1.0f; };
  for (size_t i = 0; i < xn; ++i) hx[i] = __float2half(i % 4 == 3 ? 0.0f : rnd());
  for (size_t i = 0; i < wn; ++i) hw[i] = __float2half(i % 4 == 3 ? 0.0f : 0.1f * rnd());
  for (int i = 0; i < 64; ++i) hb[i] = __float2half(0.1f * rnd());
  __half *x, *w, *b, *y, *ref;
  check(cudaMalloc(&x, std::max(xn * 2, x_bytes)), "malloc"); check(cudaMalloc(&w, wn * 2), "malloc"); check(cudaMalloc(&b, 128), "malloc");
  check(cudaMalloc(&y, yn * 2), "malloc"); check(cudaMalloc(&ref, yn * 2), "malloc");
  cudaMemcpy(x, hx.data(), xn * 2, cudaMemcpyHostToDevice); cudaMemcpy(w, hw.data(), wn * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(b, hb.data(), 128, cudaMemcpyHostToDevice);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<__half> hy(yn), hr(yn);
  auto run = [&](const char* name, int n, void (*k)(const __half*, const __half*, const __half*, __half*), dim3 grid, int threads, int smem, bool is_ref, bool packed = false) {
    if (smem > 48 * 1024) check(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "attr");
    __half* dst = is_ref ? ref : y;
    cudaMemset(dst, 0, yn * 2);
    k<<<grid, threads, smem>>>(x, w, b, dst);
    check(cudaDeviceSynchronize(), name);
    std::vector<float> ts;
    for (int r = 0; r < 30; ++r) {
      cudaEventRecord(e0); k<<<grid, threads, smem>>>(x, w, b, dst); cudaEventRecord(e1); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms * 1000);
    }
    std::sort(ts.begin(), ts.end());
    double diff = 0;
    if (!is_ref && !packed) {
      size_t m = (size_t)n * 56 * 56 * 64;
      cudaMemcpy(hy.data(), y, m * 2, cudaMemcpyDeviceToHost); cudaMemcpy(hr.data(), ref, m * 2, cudaMemcpyDeviceToHost);
      for (size_t i = 0; i < m; ++i) diff = std::max(diff, (double)fabsf(__half2float(hy[i]) - __half2float(hr[i])));
    }
    cudaFuncAttributes fa; cudaFuncGetAttributes(&fa, k);
    int occ = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, threads, smem);
    printf("%-26s median %8.2f us  min %8.2f  regs %3d  spill %4zu B  blocks/SM %d  max|diff vs old| %.3g\n", name, ts[15], ts[0], fa.numRegs, fa.localSizeBytes, occ, diff);
  };
""")
    for name, n, grid, threads, smem, *kind in launches:
        is_ref = "true" if name.startswith("old") else "false"
        if kind:  # a float input: the same launch through the common signature
            out.append(f'  run("{name}", {n}, reinterpret_cast<void (*)(const __half*, const __half*, const __half*, __half*)>'
                       f'({name}), {grid}, {threads}, {smem}, false, true);\n')
        else:
            out.append(f'  run("{name}", {n}, {name}, {grid}, {threads}, {smem}, {is_ref});\n')
    out.append("  return 0;\n}\n")
    (here / "bench.cu").write_text("".join(out))
    print(f"{len(launches)} variants -> {here / 'bench.cu'}")


if __name__ == "__main__":
    sys.exit(main())
