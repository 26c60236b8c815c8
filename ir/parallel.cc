// Contiguous chunks over std::thread; see parallel.h.
#include "ir/parallel.h"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

namespace aotc {
namespace {

constexpr int64_t kMinWorkPerThread = int64_t{4} << 20;

int64_t thread_cap() {
  static const int64_t cap = [] {
    int64_t hw = static_cast<int64_t>(std::thread::hardware_concurrency());
    if (hw <= 0) hw = 1;
    if (const char* env = std::getenv("AOTC_THREADS")) {
      char* end = nullptr;
      const long v = std::strtol(env, &end, 10);
      if (end != env && v >= 1) hw = std::min<int64_t>(hw, v);
    }
    return std::min<int64_t>(hw, 64);
  }();
  return cap;
}

}  // namespace

void parallel_for(int64_t items, int64_t work_per_item, const std::function<void(int64_t, int64_t)>& fn) {
  if (items <= 0) return;
  const long double total = static_cast<long double>(items) * static_cast<long double>(std::max<int64_t>(work_per_item, 1));
  int64_t threads = std::min<int64_t>(thread_cap(), items);
  threads = std::min<int64_t>(threads, static_cast<int64_t>(std::max<long double>(1, total / kMinWorkPerThread)));
  if (threads <= 1) {
    fn(0, items);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  const int64_t chunk = (items + threads - 1) / threads;
  for (int64_t t = 1; t < threads; ++t) {
    const int64_t begin = t * chunk, end = std::min(items, begin + chunk);
    if (begin >= end) break;
    pool.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  fn(0, std::min(items, chunk));
  for (std::thread& th : pool) th.join();
}

}  // namespace aotc
