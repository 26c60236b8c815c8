// dlopen + symbol resolution for generated libraries (see abi_library.h). Every introspection
// answer is checked (known dtype, non-negative dims, bytes == numel * element size), so a broken
// library is reported instead of driving a wrong-sized copy.
#include "tools/abi_library.h"

#include <dlfcn.h>

#include "ir/graph.h"

namespace aotc {
namespace {

struct Introspection {
  int (*num)(void) = nullptr;
  const char* (*name)(int) = nullptr;
  int (*dtype)(int) = nullptr;
  int (*rank)(int) = nullptr;
  const long long* (*shape)(int) = nullptr;
  unsigned long long (*bytes)(int) = nullptr;
};

class Resolver {
 public:
  Resolver(void* lib, const std::string& prefix) : lib_(lib), prefix_(prefix) {}
  template <class F>
  void get(F* slot, const std::string& suffix) {
    std::string symbol = prefix_ + "_" + suffix;
    void* p = dlsym(lib_, symbol.c_str());
    if (!p && missing_.empty()) missing_ = symbol;
    *slot = reinterpret_cast<F>(p);
  }
  const std::string& missing() const { return missing_; }

 private:
  void* lib_;
  std::string prefix_;
  std::string missing_;
};

Status read_tensors(const Introspection& in, const char* kind, std::vector<AbiTensorInfo>* out) {
  int n = in.num();
  if (n < 0 || n > 100000) return Status::error(std::string("library reports ") + std::to_string(n) + " " + kind + "s");
  for (int i = 0; i < n; ++i) {
    AbiTensorInfo t;
    const char* name = in.name(i);
    t.name = name ? name : "";
    int dtype = in.dtype(i);
    int rank = in.rank(i);
    const long long* dims = in.shape(i);
    std::string what = std::string(kind) + " " + std::to_string(i) + " ('" + escape_for_message(t.name) + "')";
    if (!dtype_is_known(dtype) || dtype_size(static_cast<DType>(dtype)) == 0) {
      return Status::error(what + " has unsupported dtype code " + std::to_string(dtype));
    }
    t.dtype = static_cast<DType>(dtype);
    if (rank < 0 || rank > 64 || (rank > 0 && !dims)) {
      return Status::error(what + " has a bad rank " + std::to_string(rank));
    }
    for (int d = 0; d < rank; ++d) {
      if (dims[d] < 0) return Status::error(what + " has a negative dim");
      t.shape.push_back(dims[d]);
    }
    t.bytes = in.bytes(i);
    uint64_t expected = static_cast<uint64_t>(shape_numel(t.shape) * dtype_size(t.dtype));
    if (t.bytes != expected) {
      return Status::error(what + " reports " + std::to_string(t.bytes) + " bytes, but " +
                           shape_str(t.shape) + " " + dtype_name(t.dtype) + " needs " +
                           std::to_string(expected));
    }
    out->push_back(std::move(t));
  }
  return Status::ok();
}

}  // namespace

Expected<AbiLibrary> open_abi_library(const std::string& path, const std::string& prefix) {
  AbiLibrary lib;
  lib.path = path;
  lib.prefix = prefix;
  std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return Status::error("cannot load '" + escape_for_message(path) + "': " +
                         escape_for_message(why ? why : "dlopen failed", 300));
  }
  Resolver r(handle, prefix);
  Introspection in, out;
  unsigned long long (*arena)(void) = nullptr;
  unsigned long long (*weights)(void) = nullptr;
  r.get(&lib.create, "create");
  r.get(&lib.destroy, "destroy");
  r.get(&lib.run, "run");
  r.get(&lib.run_host, "run_host");
  r.get(&lib.last_error, "last_error");
  r.get(&in.num, "num_inputs");
  r.get(&in.name, "input_name");
  r.get(&in.dtype, "input_dtype");
  r.get(&in.rank, "input_rank");
  r.get(&in.shape, "input_shape");
  r.get(&in.bytes, "input_bytes");
  r.get(&out.num, "num_outputs");
  r.get(&out.name, "output_name");
  r.get(&out.dtype, "output_dtype");
  r.get(&out.rank, "output_rank");
  r.get(&out.shape, "output_shape");
  r.get(&out.bytes, "output_bytes");
  r.get(&arena, "arena_bytes");
  r.get(&weights, "weight_bytes");
  if (!r.missing().empty()) {
    return Status::error("'" + escape_for_message(path) + "' has no symbol " + r.missing() +
                         " (not an aotc library, or its prefix is not '" + prefix + "': pass --name)");
  }
  AOTC_RETURN_IF_ERROR(read_tensors(in, "input", &lib.inputs));
  AOTC_RETURN_IF_ERROR(read_tensors(out, "output", &lib.outputs));
  lib.arena_bytes = arena();
  lib.weight_bytes = weights();
  // The optional profiling extension: all of it or none.
  Resolver p(handle, prefix);
  p.get(&lib.profile_num_steps, "profile_num_steps");
  p.get(&lib.profile_step_label, "profile_step_label");
  p.get(&lib.profile_step_kind, "profile_step_kind");
  p.get(&lib.profile_step_flops, "profile_step_flops");
  p.get(&lib.profile_step_bytes, "profile_step_bytes");
  p.get(&lib.profile_run, "profile_run");
  if (!p.missing().empty()) {
    lib.profile_num_steps = nullptr;
    lib.profile_step_label = nullptr;
    lib.profile_step_kind = nullptr;
    lib.profile_step_flops = nullptr;
    lib.profile_step_bytes = nullptr;
    lib.profile_run = nullptr;
  }
  return lib;
}

std::string describe_tensor(const AbiTensorInfo& info) {
  return "'" + escape_for_message(info.name) + "': " + dtype_name(info.dtype) + "[" + shape_str(info.shape) +
         "] (" + std::to_string(info.bytes) + " bytes)";
}

}  // namespace aotc
