// aotc-model-check: the whole-model CPU check (model_check.h) from the command line.
//   aotc-model-check MODEL_DIR [MODEL_DIR...] [--batch-dir NAME]... [--lower] [--ops]
//                    [--disable-pass NAME]...
// One line per model and data set; exit 0 only when every line is PASS (1 otherwise, 2 on usage).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "tools/model_check/model_check.h"

namespace {

const char kUsage[] =
    "usage: aotc-model-check MODEL_DIR [MODEL_DIR...] [--batch-dir test_data_set_bs1]... [--lower] [--ops]\n"
    "                        [--disable-pass NAME]... [--int8-calib DIR --int8-max-rel-l2 X [--int8-calibrator NAME]]\n"
    "  MODEL_DIR holds model.onnx (+ external data) and test_data_set*/{input_K,output_K}.pb.\n"
    "  Imports with the data set's input shapes, runs the pass pipeline, evaluates on the CPU\n"
    "  reference and compares every output by the whole-model metric (relative L2 < 1e-4, max abs\n"
    "  < 1e-3 * max|ref|, NaN/Inf positions equal). Fails when a shape computation survives the\n"
    "  pipeline.\n"
    "  --batch-dir NAME  only this data set folder (repeatable; default: every test_data_set*)\n"
    "  --lower           also lower every remaining node and plan the arena (plan_memory)\n"
    "  --ops             print the op types left after the pipeline, every failing node and a hash\n"
    "                    (FNV-1a) of each output's bytes\n"
    "  --disable-pass NAME  skip this pipeline pass (repeatable; as aotc's option)\n"
    "  --int8-calib DIR     the --precision int8 path on the CPU: calibrate (entropy) on DIR's inputs,\n"
    "                       every Conv/Gemm/MatMul in int8; outputs pass with relative L2 <= X\n"
    "                       (--int8-max-rel-l2) and every row's arg max unchanged;\n"
    "                       --int8-calibrator NAME as aotc's --calibrator (default entropy)\n"
    "  --write-outputs DIR  also write the CPU outputs as DIR/output_K.pb (one model, one data set)\n";

std::string base_name(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> model_dirs, batch_dirs;
  aotc::ModelCheckOptions options;
  bool show_ops = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--batch-dir" && i + 1 < argc) {
      batch_dirs.push_back(argv[++i]);
    } else if (a == "--lower") {
      options.lower = true;
    } else if (a == "--ops") {
      show_ops = true;
    } else if (a == "--int8-calib" && i + 1 < argc) {
      options.int8_calib_dir = argv[++i];
    } else if (a == "--write-outputs" && i + 1 < argc) {
      options.write_outputs_dir = argv[++i];
    } else if (a == "--int8-calibrator" && i + 1 < argc) {
      options.int8_calibrator = argv[++i];
    } else if (a == "--int8-max-rel-l2" && i + 1 < argc) {
      options.int8_max_rel_l2 = std::atof(argv[++i]);
    } else if (a == "--disable-pass" && i + 1 < argc) {
      options.disabled_passes.push_back(argv[++i]);
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "aotc-model-check: error: unknown option '%s'\n%s", a.c_str(), kUsage);
      return 2;
    } else {
      model_dirs.push_back(a);
    }
  }
  if (model_dirs.empty() || (!options.int8_calib_dir.empty() && !(options.int8_max_rel_l2 > 0))) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  int failures = 0, cases = 0;
  for (const std::string& dir : model_dirs) {
    std::vector<std::string> cases_here = batch_dirs.empty() ? aotc::find_case_dirs(dir) : batch_dirs;
    if (cases_here.empty()) {
      std::printf("FAIL %s: no test_data_set* folder\n", base_name(dir).c_str());
      ++failures;
      continue;
    }
    for (const std::string& c : cases_here) {
      ++cases;
      aotc::ModelCheckResult r = aotc::check_model_case(dir + "/model.onnx", dir + "/" + c, options);
      if (!r.pass) ++failures;
      std::printf("%s\n", aotc::format_result_line(base_name(dir), c, r).c_str());
      if (show_ops && r.nodes_imported > 0) {
        std::string ops = "  ops after pipeline:";
        for (const auto& kv : r.final_ops) ops += " " + kv.first + "x" + std::to_string(kv.second);
        std::printf("%s\n", ops.c_str());
        for (const std::string& s : r.shape_ops_left) std::printf("  shape op left: %s\n", s.c_str());
        for (const std::string& s : r.lowering_failures) std::printf("  no lowering: %s\n", s.c_str());
        for (const aotc::OutputCheck& o : r.outputs)
          std::printf("  output %s fnv1a %016llx\n", aotc::escape_for_message(o.name, 60).c_str(),static_cast<unsigned long long>(o.fnv1a));
      }
      std::fflush(stdout);
    }
  }
  std::printf("%d/%d passed\n", cases - failures, cases);
  return failures == 0 ? 0 : 1;
}
