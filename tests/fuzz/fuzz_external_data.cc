// libFuzzer harness for external data (issue 10; the CVE-2022-25882 / CVE-2024-27318 class):
// the input decides a file tree in the model's folder (regular files with fuzzed contents,
// sub-folders, FIFOs, symlinks to files and folders inside and outside, to devices, to
// themselves, hard links to files inside and to the file outside) and a model whose initializers
// and Constant values point into it with fuzzed location / offset / length / checksum entries. The model is imported from memory with that
// folder as its base. Two checks beyond "no crash, no sanitizer report, no hang":
//  - no file outside the model's folder is opened while importing: fopen/open are interposed
//    here, and each path opened is resolved and compared with the folder;
//  - no byte of the one file outside (all 0xA5, a value the tree's files never contain) reaches
//    a constant of the imported graph.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <string>
#include <vector>

#include <fuzzer/FuzzedDataProvider.h>
#include <onnx/onnx_pb.h>

#include "tests/fuzz/fuzz_support.h"

namespace {

constexpr uint8_t kOutsideByte = 0xA5;
bool g_watching = false;     // only while the importer runs (libFuzzer opens corpus files too)
std::string g_inside;        // resolved model folder + "/"

void check_opened(const char* path) {
  if (!g_watching || path == nullptr) return;
  char resolved[PATH_MAX];
  if (::realpath(path, resolved) == nullptr) return;  // nothing there: nothing read
  if (std::strncmp(resolved, g_inside.c_str(), g_inside.size()) == 0) return;
  std::fprintf(stderr, "aotc fuzz: the importer opened '%s' (resolves to '%s'), outside the model folder '%s'\n",
               path, resolved, g_inside.c_str());
  std::abort();
}

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

}  // namespace

// The interposers: this executable's definitions win over libc's (and over the sanitizer's weak
// interceptors); each checks the path, then calls the next definition.
extern "C" FILE* fopen(const char* path, const char* mode) {
  check_opened(path);
  static auto next = real<FILE* (*)(const char*, const char*)>("fopen");
  return next(path, mode);
}
extern "C" FILE* fopen64(const char* path, const char* mode) {
  check_opened(path);
  static auto next = real<FILE* (*)(const char*, const char*)>("fopen64");
  return next(path, mode);
}
extern "C" int open(const char* path, int flags, ...) {
  check_opened(path);
  va_list ap;
  va_start(ap, flags);
  mode_t mode = (flags & O_CREAT) ? static_cast<mode_t>(va_arg(ap, int)) : 0;
  va_end(ap);
  static auto next = real<int (*)(const char*, int, ...)>("open");
  return next(path, flags, mode);
}
extern "C" int open64(const char* path, int flags, ...) {
  check_opened(path);
  va_list ap;
  va_start(ap, flags);
  mode_t mode = (flags & O_CREAT) ? static_cast<mode_t>(va_arg(ap, int)) : 0;
  va_end(ap);
  static auto next = real<int (*)(const char*, int, ...)>("open64");
  return next(path, flags, mode);
}

namespace {

namespace fs = std::filesystem;

struct Tree {
  std::string root, model, outside_file;
};

const Tree& tree() {
  static const Tree t = [] {
    Tree t;
    t.root = aotc::fuzz::scratch_dir("external");
    t.model = t.root + "/model";
    fs::create_directories(t.root + "/outside");
    t.outside_file = t.root + "/outside/secret.bin";
    std::ofstream(t.outside_file, std::ios::binary) << std::string(4096, static_cast<char>(kOutsideByte));
    return t;
  }();
  return t;
}

template <size_t N>
const char* choose(FuzzedDataProvider& in, const char* const (&options)[N]) {
  return options[in.ConsumeIntegralInRange<size_t>(0, N - 1)];
}

// Paths inside the model folder the tree may create, and what links may point at.
const char* const kPaths[] = {"w.bin", "sub/w.bin", "sub", "link.bin", "up", "sub/link.bin", "loop.bin", "x"};
const char* const kTargets[] = {"../outside/secret.bin", "@abs", "w.bin", "sub/w.bin", "..", "../outside",
                                "/dev/zero", "/proc/self/mem", "loop.bin", "link.bin", "sub", "/",
                                "../model/w.bin", ".", "../../model/w.bin", "up/outside/secret.bin"};
const char* const kLocations[] = {"w.bin", "sub/w.bin", "./w.bin", "sub/../w.bin", "../outside/secret.bin",
                                  "../model/w.bin", "@abs", "/etc/passwd", "link.bin", "sub/link.bin",
                                  "up/outside/secret.bin", "up/model/w.bin", "loop.bin", "", "sub", "x",
                                  "w.bin/", "sub//w.bin", ".", "..", "up", "/dev/zero", "@random"};
const char* const kKeys[] = {"location", "offset", "length", "checksum", "basepath", "", "LOCATION", "offset "};
const int32_t kDtypes[] = {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 16, 17, 21, 22, 23, 0, 8, 99};

std::string resolve(const std::string& text) {
  return text == "@abs" ? tree().outside_file : text;
}

std::string number_text(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 5)) {
    case 0: return std::to_string(in.ConsumeIntegralInRange<int64_t>(0, 300));
    case 1: return std::to_string(in.ConsumeIntegral<int64_t>());
    case 2: return std::to_string(in.ConsumeIntegral<uint64_t>()) + "0";
    case 3: return "-" + std::to_string(in.ConsumeIntegralInRange(0, 9));
    case 4: return in.ConsumeRandomLengthString(24);
    default: return std::to_string(in.ConsumeIntegralInRange<int64_t>(0, 16) * 4);
  }
}

// Contents of a file in the tree: fuzzed, without the outside byte.
std::string inside_bytes(FuzzedDataProvider& in) {
  std::string bytes = in.ConsumeBytesAsString(in.ConsumeIntegralInRange<size_t>(0, 512));
  for (char& c : bytes)
    if (static_cast<uint8_t>(c) == kOutsideByte) c = static_cast<char>(kOutsideByte - 1);
  return bytes;
}

// Creates the entries in the model folder only: never through a link (a link planted by an
// earlier entry may point at a device or outside), never over an existing entry.
void build_tree(FuzzedDataProvider& in) {
  std::error_code ec;
  fs::remove_all(tree().model, ec);
  fs::create_directories(tree().model);
  for (int k = 0, n = in.ConsumeIntegralInRange(0, 5); k < n; ++k) {
    const fs::path path = fs::path(tree().model) / choose(in, kPaths);
    const fs::path parent = path.parent_path();
    if (parent != fs::path(tree().model)) {
      if (fs::is_symlink(fs::symlink_status(parent, ec))) continue;
      fs::create_directory(parent, ec);
      if (!fs::is_directory(fs::symlink_status(parent, ec))) continue;
    }
    const char* p = path.c_str();
    switch (in.ConsumeIntegralInRange(0, 5)) {
      case 0:
      case 1: {
        const int fd = ::open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        const std::string bytes = inside_bytes(in);
        if (fd < 0) break;
        if (::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) std::abort();
        ::close(fd);
        break;
      }
      case 2: ::symlink(resolve(choose(in, kTargets)).c_str(), p); break;
      case 3: ::mkdir(p, 0755); break;
      case 4: ::link(resolve(choose(in, kTargets)).c_str(), p); break;  // a second name of a file
      default: ::mkfifo(p, 0644); break;
    }
  }
}

onnx::ModelProto build_model(FuzzedDataProvider& in) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(21);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("external");
  for (int k = 0, n = in.ConsumeIntegralInRange(1, 3); k < n; ++k) {
    const std::string name = "t" + std::to_string(k);
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(kDtypes[in.ConsumeIntegralInRange<size_t>(0, sizeof(kDtypes) / sizeof(kDtypes[0]) - 1)]);
    for (int d = 0, rank = in.ConsumeIntegralInRange(0, 3); d < rank; ++d)
      t.add_dims(in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(0, 8) : in.ConsumeIntegral<int64_t>());
    t.set_data_location(in.ConsumeIntegralInRange(0, 7) == 0 ? onnx::TensorProto::DEFAULT : onnx::TensorProto::EXTERNAL);
    for (int e = 0, entries = in.ConsumeIntegralInRange(0, 5); e < entries; ++e) {
      auto* kv = t.add_external_data();
      kv->set_key(e == 0 && in.ConsumeIntegralInRange(0, 7) != 0 ? "location" : choose(in, kKeys));
      if (kv->key() == "location") {
        std::string loc = resolve(choose(in, kLocations));
        if (loc == "@random") loc = in.ConsumeRandomLengthString(32);
        kv->set_value(loc);
      } else {
        kv->set_value(number_text(in));
      }
    }
    if (in.ConsumeIntegralInRange(0, 7) == 0) t.set_raw_data(inside_bytes(in));
    // As an initializer, or as the value of a Constant node (attributes take external data too).
    onnx::NodeProto* node = g->add_node();
    node->set_name("use_" + name);
    if (in.ConsumeBool()) {
      *g->add_initializer() = t;
      node->set_op_type("Identity");
      node->add_input(name);
    } else {
      node->set_op_type("Constant");
      auto* a = node->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      *a->mutable_t() = t;
    }
    node->add_output("y" + std::to_string(k));
    g->add_output()->set_name("y" + std::to_string(k));
  }
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aotc;
  static const ImportOptions options = fuzz::import_options();
  FuzzedDataProvider in(data, size);
  build_tree(in);
  const std::string bytes = build_model(in).SerializeAsString();
  char resolved[PATH_MAX];
  if (!::realpath(tree().model.c_str(), resolved)) std::abort();
  g_inside = std::string(resolved) + "/";
  g_watching = true;
  Expected<Graph> graph = load_onnx_model_from_memory(bytes.data(), bytes.size(), tree().model, options);
  g_watching = false;
  if (!graph) {
    fuzz::require_proper_error(graph.status(), "load");
    return 0;
  }
  for (const Value& v : graph->values) {
    if (!v.is_constant()) continue;
    const uint8_t* p = v.constant->raw();
    for (int64_t i = 0, n = v.constant->byte_size(); i < n; ++i)
      if (p[i] == kOutsideByte) {
        std::fprintf(stderr, "aotc fuzz: constant '%s' holds a byte of the file outside the model folder\n",
                     v.name.c_str());
        std::abort();
      }
  }
  return 0;
}
