// Strided view algebra over atoms (see strided_view.h).
#include "opt/strided_view.h"

#include <deque>

namespace aotc {
namespace {

struct Atom {
  int64_t dim, stride;
};

// First atom index of logical dim `axis`.
size_t run_start(const StridedView& v, size_t axis) {
  size_t s = 0;
  for (size_t d = 0; d < axis; ++d) s += v.spans[d];
  return s;
}

// The atoms with contiguous neighbours merged (outer stride == inner stride * inner dim): the
// row-major element order, in the fewest pieces.
std::vector<Atom> merged_atoms(const StridedView& v) {
  std::vector<Atom> m;
  for (size_t i = 0; i < v.dims.size(); ++i) {
    if (!m.empty() && m.back().stride == v.strides[i] * v.dims[i]) {
      m.back() = Atom{m.back().dim * v.dims[i], v.strides[i]};
    } else {
      m.push_back(Atom{v.dims[i], v.strides[i]});
    }
  }
  return m;
}

}  // namespace

StridedView contiguous_view(const Shape& shape) {
  StridedView v;
  const std::vector<int64_t> strides = shape_strides(shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    v.spans.push_back(shape[d] > 1 ? 1 : 0);
    if (shape[d] > 1) {
      v.dims.push_back(shape[d]);
      v.strides.push_back(strides[d]);
    }
  }
  return v;
}

void view_permute(StridedView& v, const std::vector<int64_t>& perm) {
  StridedView out;
  out.base = v.base;
  for (int64_t p : perm) {
    const size_t axis = static_cast<size_t>(p), start = run_start(v, axis);
    for (size_t j = start; j < start + v.spans[axis]; ++j) {
      out.dims.push_back(v.dims[j]);
      out.strides.push_back(v.strides[j]);
    }
    out.spans.push_back(v.spans[axis]);
  }
  v = out;
}

bool view_reshape(StridedView& v, const Shape& shape) {
  int64_t numel = 1;
  for (int64_t d : v.dims) numel *= d;
  if (shape_numel(shape) != numel || numel == 0) return false;
  std::vector<Atom> pool = merged_atoms(v);
  std::deque<Atom> out;
  std::vector<size_t> spans(shape.size(), 0);
  // From the innermost new dim: take whole atoms while they divide what is left of the dim, and
  // split the last one when the dim ends inside it.
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t left = shape[d];
    while (left > 1) {
      if (pool.empty()) return false;
      Atom& a = pool.back();
      if (a.dim <= left) {
        if (left % a.dim != 0) return false;
        out.push_front(a);
        left /= a.dim;
        pool.pop_back();
      } else {
        if (a.dim % left != 0) return false;
        out.push_front(Atom{left, a.stride});
        a = Atom{a.dim / left, a.stride * left};
        left = 1;
      }
      ++spans[d];
    }
  }
  if (!pool.empty()) return false;
  v.dims.clear();
  v.strides.clear();
  for (const Atom& a : out) {
    v.dims.push_back(a.dim);
    v.strides.push_back(a.stride);
  }
  v.spans = spans;
  return true;
}

void view_select(StridedView& v, size_t axis, int64_t index) {
  const size_t start = run_start(v, axis), span = v.spans[axis];
  for (size_t j = start + span; j-- > start;) {
    v.base += (index % v.dims[j]) * v.strides[j];
    index /= v.dims[j];
  }
  const auto first = static_cast<std::ptrdiff_t>(start), last = static_cast<std::ptrdiff_t>(start + span);
  v.dims.erase(v.dims.begin() + first, v.dims.begin() + last);
  v.strides.erase(v.strides.begin() + first, v.strides.begin() + last);
  v.spans.erase(v.spans.begin() + static_cast<std::ptrdiff_t>(axis));
}

bool view_slice(StridedView& v, size_t axis, int64_t size, int64_t start, int64_t step, int64_t count) {
  if (count <= 0) return false;
  if (start == 0 && step == 1 && count == size) return true;
  const size_t span = v.spans[axis];
  if (span == 0) return true;  // a dim of size 1: count is 1 and start 0
  if (span > 1) return false;
  const size_t j = run_start(v, axis);
  v.base += start * v.strides[j];
  if (count == 1) {
    v.dims.erase(v.dims.begin() + static_cast<std::ptrdiff_t>(j));
    v.strides.erase(v.strides.begin() + static_cast<std::ptrdiff_t>(j));
    v.spans[axis] = 0;
  } else {
    v.dims[j] = count;
    v.strides[j] *= step;
  }
  return true;
}

GatherView gather_view(const StridedView& v) { return GatherView{v.dims, v.strides, v.base}; }

bool view_is_identity(const StridedView& v, int64_t source_numel) {
  if (v.base != 0) return false;
  std::vector<Atom> m = merged_atoms(v);
  if (m.empty()) return source_numel == 1;
  return m.size() == 1 && m[0].stride == 1 && m[0].dim == source_numel;
}

}  // namespace aotc
