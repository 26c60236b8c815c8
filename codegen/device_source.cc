// Rendering, de-duplicating and splitting the device code (see device_source.h).
#include "codegen/device_source.h"

#include <algorithm>
#include <map>

#include "codegen/embedded_files.h"
#include "codegen/identifiers.h"
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
};

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

}  // namespace

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
      unique.push_back({k.name, *code, {}});
    }
    unique_of[i] = it->second;
    unique[static_cast<size_t>(it->second)].comments.push_back(k.name + ": " + k.comment);
  }
  int files = std::clamp((static_cast<int>(unique.size()) + kKernelsPerDeviceFile - 1) / kKernelsPerDeviceFile,
                         1, kMaxDeviceFiles);
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
    for (size_t u : order) {
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
  std::vector<std::string> sources(static_cast<size_t>(files));
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
      small = small || (file_of[u] == f && (unique[u].code.find("aotc_sf_") != std::string::npos ||
                                            unique[u].code.find("aotc_si_") != std::string::npos ||
                                            unique[u].code.find("aotc_saturate_ll") != std::string::npos));
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
