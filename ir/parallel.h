// parallel_for: the CPU reference's one way to use several cores (convolutions and matmuls of
// calibration and whole-model checks). Items are split into contiguous chunks, one per thread;
// each item's arithmetic is unchanged, so results are bit-identical to a serial loop.
// AOTC_THREADS=N caps the threads (1: serial); small jobs (work below ~4 M operations) stay serial.
#pragma once

#include <cstdint>
#include <functional>

namespace aotc {

// Calls fn(begin, end) over [0, items) in chunks; `work_per_item` (e.g. multiply-adds) decides
// how many threads are worth starting.
void parallel_for(int64_t items, int64_t work_per_item, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace aotc
