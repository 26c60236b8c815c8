// Rendering, de-duplicating and splitting the device code (see device_source.h).
#include "codegen/device_source.h"

#include <algorithm>
#include <map>

#include "codegen/embedded_files.h"
#include "codegen/identifiers.h"
#include "codegen/sha256.h"
#include "codegen/template_renderer.h"

namespace aotc {
namespace {

bool is_plain_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

struct UniqueKernel {
  std::string name;                   // the first kernel's name: the __global__ function
  std::string code;                   // rendered under that name
  std::vector<std::string> comments;  // one per kernel it covers
  std::string standalone;             // a kernel-library file of its own (kernel_library_file), or ""
};

bool uses_small_dtype_helpers(const std::string& code) {
  return code.find("aotc_sf_") != std::string::npos || code.find("aotc_si_") != std::string::npos ||
         code.find("aotc_saturate_ll") != std::string::npos;
}

// A rough relative cost of compiling a rendered kernel with nvcc (an ordering for the balance
// below, not a time). nvcc 13 on the 2-core machine, one file at a time (docs/results.md,
// twenty-third session): a file with one CUTLASS 3.x sm90 kernel 31.0 s, two 38.6 s, three 51.4 s;
// one CUTLASS 2.x kernel and five of aotc's own 4.2-4.8 s; six of aotc's own 0.74 s.
constexpr int64_t kHeavyCompileWeight = 24;
int64_t compile_weight(const std::string& code) {
  if (code.find("cutlass/conv/collective") != std::string::npos || code.find("cute/tensor.hpp") != std::string::npos)
    return kHeavyCompileWeight;
  if (code.find("cutlass/") != std::string::npos || code.find("kernel_forward.h") != std::string::npos) return 6;
  return 1;
}

Expected<std::string> render_kernel(const ProgramKernel& k, const Graph& graph,
                                    const std::string& kernel_name, bool blank_comment,
                                    const std::map<std::string, std::string>* extra) {
  const Node& node = graph.nodes[static_cast<size_t>(k.node_index)];
  if (!is_plain_name(k.template_name))
    return node_error(node, "lowering names template '" + escape_for_message(k.template_name) +
                                "', which is not a plain file name");
  std::string text;
  auto it = extra ? extra->find(k.template_name) : std::map<std::string, std::string>::const_iterator{};
  if (extra && it != extra->end()) {
    text = it->second;
  } else {
    const std::string path = "templates/" + k.template_name + ".cu.in";
    const EmbeddedFile* tmpl = find_embedded_file(path);
    if (!tmpl) return node_error(node, "template " + path + " is not embedded in this aotc");
    text = tmpl->text();
  }
  Holes holes = k.holes;
  if (blank_comment)
    for (auto& [key, value] : holes)
      if (key == "comment") value.clear();
  holes.emplace_back("kernel_name", kernel_name);
  auto rendered = render_template(k.template_name, text, holes);
  if (!rendered) return node_error(node, rendered.status().message());
  return rendered;
}

const char* const kKernelLibraryFileHeader = "// aotc kernel library file v1\n";

}  // namespace

bool is_kernel_library_file(const std::string& source) {
  return source.rfind(kKernelLibraryFileHeader, 0) == 0;
}

std::string kernel_library_file(const std::string& code, const std::string& common) {
  std::string out = kKernelLibraryFileHeader;
  out +=
      "// A kernel-library file of aotc (codegen/device_source.h): one kernel, named by a hash of its\n"
      "// code, nothing of the model it was first compiled for. Do not edit: regenerate with aotc.\n\n";
  out += common;
  if (uses_small_dtype_helpers(code)) {
    const EmbeddedFile* helpers = find_embedded_file("templates/small_dtypes.cuh");
    out += "\n";
    out += helpers ? helpers->text() : std::string("#error templates/small_dtypes.cuh is not embedded\n");
  }
  out += "\n";
  out += code;
  if (out.back() != '\n') out += '\n';
  return out;
}

Expected<std::vector<std::string>> render_device_sources(LaunchProgram& program, const Graph& graph,
                                                         const DeviceSourceInfo& info) {
  const EmbeddedFile* common = find_embedded_file("templates/common.cuh");
  if (!common) return Status::error("internal: templates/common.cuh is not embedded");
  std::vector<UniqueKernel> unique;
  std::vector<int> unique_of(program.kernels.size());
  std::map<std::string, int> by_code;  // code under a fixed name, without the comment hole
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    ProgramKernel& k = program.kernels[i];
    auto key = render_kernel(k, graph, "aotc_kernel", true, info.extra_templates);
    if (!key) return key.status();
    auto [it, fresh] = by_code.emplace(*key, static_cast<int>(unique.size()));
    if (fresh) {
      auto code = render_kernel(k, graph, k.name, false, info.extra_templates);
      if (!code) return code.status();
      unique.push_back({k.name, *code, {}, {}});
      // A heavy kernel the kernel library holds (or is to hold) gets a file of its own whose text
      // depends on nothing of the model: named by a hash of its code, without the node comments.
      if (info.standalone && compile_weight(*code) >= kHeavyCompileWeight) {
        Sha256 h;
        h.update(key->data(), key->size());
        const std::string name = "aotc_lib_" + h.hex_digest().substr(0, 20);
        auto lib_code = render_kernel(k, graph, name, true, info.extra_templates);
        if (!lib_code) return lib_code.status();
        std::string file = kernel_library_file(*lib_code, common->text());
        if (info.standalone(file)) {
          unique.back().name = name;
          unique.back().code = *lib_code;
          unique.back().standalone = std::move(file);
        }
      }
    }
    unique_of[i] = it->second;
    unique[static_cast<size_t>(it->second)].comments.push_back(k.name + ": " + k.comment);
  }
  int grouped = 0;
  for (const UniqueKernel& u : unique) grouped += u.standalone.empty() ? 1 : 0;
  int files = grouped == 0 && !unique.empty()
                  ? 0
                  : std::clamp((grouped + kKernelsPerDeviceFile - 1) / kKernelsPerDeviceFile, 1, kMaxDeviceFiles);
  // Files compile in parallel, so their nvcc times should be even: heaviest kernels first, each to
  // the least loaded file (ties: the lowest index; with equal weights this is u % files). The
  // CUTLASS 3.x kernels all go to one file: most of their cost is parsing the same headers, which
  // a second file would pay again (one such kernel alone costs 31.0 s, three together 51.4 s, so
  // split 2 + 1 they cost ~70 s of CPU against 51 on a machine that also builds the compile-time
  // params program beside them).
  std::vector<int> file_of(unique.size());
  {
    std::vector<int64_t> weight(unique.size());
    std::vector<size_t> order(unique.size());
    for (size_t u = 0; u < order.size(); ++u) {
      order[u] = u;
      weight[u] = compile_weight(unique[u].code);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weight[a] > weight[b]; });
    std::vector<int64_t> load(static_cast<size_t>(files), 0);
    int heavy_file = -1;
    int next_standalone = files;  // kernel-library files come after the grouped ones
    for (size_t u : order)
      if (!unique[u].standalone.empty()) file_of[u] = next_standalone++;
    for (size_t u : order) {
      if (!unique[u].standalone.empty()) continue;
      const int64_t w = weight[u];
      int f = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      if (w >= kHeavyCompileWeight) {
        if (heavy_file < 0) heavy_file = f;
        f = heavy_file;
      }
      file_of[u] = f;
      load[static_cast<size_t>(f)] += w;
    }
  }
  // Every kernel launches its distinct kernel's function, in that kernel's file.
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    int u = unique_of[i];
    program.kernels[i].function = unique[static_cast<size_t>(u)].name;
    program.kernels[i].module = file_of[static_cast<size_t>(u)];
    if (program.kernels[i].host_params) program.kernels[i].host_source = unique[static_cast<size_t>(u)].code;
    program.kernels[i].pdl = info.pdl != PdlMode::kOff &&
                             unique[static_cast<size_t>(u)].code.find("AOTC_PDL_ENTER();") != std::string::npos;
  }
  int standalone_files = 0;
  for (const UniqueKernel& u : unique) standalone_files += u.standalone.empty() ? 0 : 1;
  std::vector<std::string> sources(static_cast<size_t>(files + standalone_files));
  for (size_t u = 0; u < unique.size(); ++u)
    if (!unique[u].standalone.empty()) sources[static_cast<size_t>(file_of[u])] = unique[u].standalone;
  for (int f = 0; f < files; ++f) {
    std::string& out = sources[static_cast<size_t>(f)];
    int count = 0;
    for (size_t u = 0; u < unique.size(); ++u) count += file_of[u] == f ? 1 : 0;
    out += "// Generated by aotc " + sanitize_comment(info.aotc_version, 40) + " from model " +
           sanitize_comment(info.model_name, 60) + "\n";
    out += "// model hash: " + sanitize_comment(info.model_hash, 80) + "\n";
    out += "// device file " + std::to_string(f + 1) + " of " + std::to_string(files) + ": " +
           std::to_string(count) + " of " + std::to_string(unique.size()) +
           " distinct kernels, in launch order. Do not edit: regenerate with aotc.\n\n";
    out += common->text();
    // The sub-16-bit type helpers, only in files whose kernels call them (other sources, and so
    // their kernel-cache keys, stay as they were).
    bool small = false;
    for (size_t u = 0; u < unique.size(); ++u)
      small = small || (file_of[u] == f && uses_small_dtype_helpers(unique[u].code));
    if (small) {
      const EmbeddedFile* helpers = find_embedded_file("templates/small_dtypes.cuh");
      if (!helpers) return Status::error("internal: templates/small_dtypes.cuh is not embedded");
      out += "\n";
      out += helpers->text();
    }
    for (size_t u = 0; u < unique.size(); ++u) {
      if (file_of[u] != f) continue;
      out += "\n";
      for (const std::string& c : unique[u].comments) out += "// ---- " + c + "\n";
      out += unique[u].code;
      if (out.back() != '\n') out += '\n';
    }
  }
  return sources;
}

}  // namespace aotc
