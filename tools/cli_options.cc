// Argument parsing for aotc and aotc-run (see cli_options.h). Both accept "--opt value" and
// "--opt=value"; every refusal is one line that names the option and ends with a hint.
#include "tools/cli_options.h"

#include "ir/ops/conv_configs.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <set>

#include "ir/graph.h"

namespace aotc {
namespace {

constexpr size_t kMaxNameLength = 64;
const char kAotcHint[] = " (see aotc --help)";
const char kRunHint[] = " (see aotc-run --help)";

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Strict integer parse: the whole text, decimal, in [min, max].
bool parse_int(const std::string& text, int64_t min, int64_t max, int64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  size_t i = (text[0] == '-') ? 1 : 0;
  if (i == text.size()) return false;
  for (size_t k = i; k < text.size(); ++k) {
    if (!is_digit(text[k])) return false;
  }
  errno = 0;
  long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno != 0 || v < min || v > max) return false;
  *out = v;
  return true;
}

// Appends the items of a comma list to `out`; false on an empty item ("a,,b", "a,").
bool split_comma_list(const std::string& text, std::vector<std::string>& out) {
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) return false;
    out.push_back(item);
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

bool parse_double(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !(v >= 0) || v > 1e30) return false;
  *out = v;
  return true;
}

// Walks an argument list; splits "--opt=value" and fetches the value of an option that needs one.
class ArgCursor {
 public:
  ArgCursor(const std::vector<std::string>& args, const char* hint) : args_(args), hint_(hint) {}
  bool done() const { return index_ >= args_.size(); }
  // Advances to the next argument; returns the option part ("--report" of "--report=x").
  std::string next() {
    const std::string& arg = args_[index_++];
    inline_value_.reset();
    if (arg.size() > 2 && arg[0] == '-' && arg[1] == '-') {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        inline_value_ = arg.substr(eq + 1);
        return arg.substr(0, eq);
      }
    }
    return arg;
  }
  Expected<std::string> value(const std::string& option) {
    if (inline_value_) return *inline_value_;
    if (done()) return Status::error("option " + option + " needs a value" + hint_);
    return args_[index_++];
  }
  bool has_inline_value() const { return inline_value_.has_value(); }
  Status usage(const std::string& message) const { return Status::error(message + hint_); }
  // The value of `option`, which must be one of `choices`; the refusal lists them in this order:
  // "bad --opt 'x': expected a, b or c".
  Expected<std::string> choice(const std::string& option, std::initializer_list<const char*> choices) {
    Expected<std::string> v = value(option);
    if (!v) return v;
    std::string list;
    size_t i = 0;
    for (const char* c : choices) {
      if (*v == c) return v;
      list += std::string(i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + c;
      ++i;
    }
    return usage("bad " + option + " '" + escape_for_message(*v) + "': expected " + list);
  }

 private:
  const std::vector<std::string>& args_;
  const char* hint_;
  size_t index_ = 0;
  std::optional<std::string> inline_value_;
};

}  // namespace

Status check_abi_name(const std::string& name) {
  if (name.empty()) return Status::error("--name must not be empty");
  if (name.size() > kMaxNameLength) {
    return Status::error("--name is longer than " + std::to_string(kMaxNameLength) + " characters");
  }
  if (!is_ident_start(name[0])) {
    return Status::error("--name '" + escape_for_message(name) +
                         "' must start with a letter or '_' (it prefixes C identifiers)");
  }
  for (char c : name) {
    if (!is_ident_char(c)) {
      return Status::error("--name '" + escape_for_message(name) +
                           "' may only contain [A-Za-z0-9_] (it prefixes C identifiers)");
    }
  }
  return Status::ok();
}

Expected<std::string> abi_name_from_path(const std::string& path) {
  std::string base = path;
  size_t slash = base.find_last_of('/');
  if (slash != std::string::npos) base = base.substr(slash + 1);
  if (base.size() > 3 && base.compare(base.size() - 3, 3, ".so") == 0) base.resize(base.size() - 3);
  if (base.size() > 3 && base.compare(0, 3, "lib") == 0) base = base.substr(3);
  std::string name;
  for (char c : base) name += is_ident_char(c) ? c : '_';
  if (name.size() > kMaxNameLength) name.resize(kMaxNameLength);
  if (name.empty() || is_digit(name[0])) {
    return Status::error("cannot derive an ABI prefix from '" + escape_for_message(path) +
                         "' (it would be '" + name + "', which is not a C identifier); pass --name");
  }
  return name;
}

Expected<std::vector<std::string>> parse_arch_list(const std::string& text) {
  std::vector<std::string> archs;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    // sm_NN: machine code (SASS); compute_NN: PTX only, JIT-compiled by the driver on load.
    const size_t prefix = item.compare(0, 8, "compute_") == 0 ? 8 : 3;
    size_t digits = 0;
    while (prefix + digits < item.size() && is_digit(item[prefix + digits])) ++digits;
    size_t rest = item.size() - prefix - digits;
    bool ok = item.size() >= prefix + 2 && (prefix == 8 || item.compare(0, 3, "sm_") == 0) &&
              (digits == 2 || digits == 3) && (rest == 0 || (rest == 1 && item.back() == 'a'));
    if (!ok) {
      return Status::error("bad --arch '" + escape_for_message(item) +
                           "': expected sm_NN or compute_NN, e.g. sm_90 or sm_87 (comma list allowed)");
    }
    archs.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return archs;
}

Expected<std::pair<std::string, Shape>> parse_input_shape(const std::string& text) {
  size_t colon = text.find_last_of(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::error("bad --input-shape '" + escape_for_message(text) +
                         "': expected NAME:DIMS, e.g. input:1x3x224x224");
  }
  std::string name = text.substr(0, colon), dims = text.substr(colon + 1);
  Shape shape;
  if (dims != "scalar") {
    size_t start = 0;
    while (true) {
      size_t x = dims.find('x', start);
      std::string item = dims.substr(start, x == std::string::npos ? std::string::npos : x - start);
      int64_t d = 0;
      if (!parse_int(item, 0, int64_t{1} << 40, &d)) {
        return Status::error("bad --input-shape '" + escape_for_message(text) + "': dim '" +
                             escape_for_message(item) +
                             "' is not an integer >= 0; expected NAME:DIMS, e.g. input:1x3x224x224");
      }
      shape.push_back(d);
      if (x == std::string::npos) break;
      start = x + 1;
    }
  }
  return std::make_pair(name, shape);
}

std::string find_nvcc() {
  const char* cuda_home = std::getenv("CUDA_HOME");
  if (cuda_home && *cuda_home) {
    std::string p = std::string(cuda_home) + "/bin/nvcc";
    if (file_exists(p)) return p;
  }
  if (file_exists("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  return "nvcc";
}

const char* aotc_version_string() {
#ifdef AOTC_VERSION
  return AOTC_VERSION;
#else
  return "0.0.0";
#endif
}

Expected<AotcOptions> parse_aotc_args(const std::vector<std::string>& args) {
  AotcOptions o;
  ArgCursor cur(args, kAotcHint);
  bool first = true;
  std::vector<std::string> positional;
  std::set<std::string> seen_arch;
  while (!cur.done()) {
    std::string opt = cur.next();
    if (first && opt == "check") {
      o.mode = AotcOptions::Mode::kCheck;
      first = false;
      continue;
    }
    if (first && opt == "calibrate") {
      o.mode = AotcOptions::Mode::kCalibrate;
      first = false;
      continue;
    }
    first = false;
    auto need = [&]() { return cur.value(opt); };
#define AOTC_TAKE(var)                               \
  do {                                               \
    auto v_ = need();                                \
    if (!v_) return v_.status();                     \
    var = *v_;                                       \
  } while (0)
#define AOTC_CHOOSE(var, ...)                        \
  do {                                               \
    auto v_ = cur.choice(opt, __VA_ARGS__);          \
    if (!v_) return v_.status();                     \
    var = *v_;                                       \
  } while (0)
    if (opt == "-h" || opt == "--help") {
      o.mode = AotcOptions::Mode::kHelp;
      return o;
    } else if (opt == "--version") {
      o.mode = AotcOptions::Mode::kVersion;
      return o;
    } else if (opt == "-o" || opt == "--output") {
      AOTC_TAKE(o.output_path);
    } else if (opt == "--name") {
      AOTC_TAKE(o.name);
      AOTC_RETURN_IF_ERROR(check_abi_name(o.name));
    } else if (opt == "--arch") {
      std::string text;
      AOTC_TAKE(text);
      auto list = parse_arch_list(text);
      if (!list) return list.status();
      for (const auto& a : *list) {
        if (seen_arch.insert(a).second) o.archs.push_back(a);
      }
    } else if (opt == "--input-shape") {
      std::string text;
      AOTC_TAKE(text);
      auto parsed = parse_input_shape(text);
      if (!parsed) return parsed.status();
      if (o.input_shapes.count(parsed->first)) {
        return cur.usage("--input-shape given twice for input '" + escape_for_message(parsed->first) + "'");
      }
      o.input_shapes[parsed->first] = parsed->second;
    } else if (opt == "--batch") {
      std::string text;
      AOTC_TAKE(text);
      if (!parse_int(text, 1, int64_t{1} << 31, &o.batch)) {
        return cur.usage("bad --batch '" + escape_for_message(text) + "': expected an integer >= 1");
      }
    } else if (opt == "--precision") {
      AOTC_CHOOSE(o.precision, {"fp32", "fp16", "bf16", "int8"});
    } else if (opt == "--io-dtype") {
      AOTC_CHOOSE(o.io_dtype, {"model", "fp16", "bf16"});
    } else if (opt == "--keep-fp32") {
      std::string text;
      AOTC_TAKE(text);
      if (!split_comma_list(text, o.keep_fp32)) return cur.usage("empty name in --keep-fp32");
    } else if (opt == "--depthwise-tile") {
      std::string text;
      AOTC_CHOOSE(text, {"cb-first", "tow-first"});
      o.depthwise_tile_tow_first = text == "tow-first";
    } else if (opt == "--epilogue-exclude") {
      std::string text;
      AOTC_TAKE(text);
      if (!split_comma_list(text, o.epilogue_excluded)) return cur.usage("empty op type in --epilogue-exclude");
    } else if (opt == "--conv-config") {
      AOTC_TAKE(o.conv_config);
      if (!find_conv_config(o.conv_config) && !find_simt_gemm_config(o.conv_config) &&
          !find_tc_gemm_config(o.conv_config)) {
        std::string names;
        for (const auto* list :
             {&conv_kernel_configs(), &conv_candidate_configs(), &simt_gemm_configs(), &tc_gemm_configs()})
          for (const ConvKernelConfig& c : *list) names += std::string(names.empty() ? "" : ", ") + c.name;
        return cur.usage("unknown --conv-config '" + escape_for_message(o.conv_config) + "'; known: " + names);
      }
    } else if (opt == "--conv-pointwise") {
      std::string text;
      AOTC_CHOOSE(text, {"cublaslt", "cutlass"});
      o.conv_pointwise_gemm = text == "cublaslt";
    } else if (opt == "--int8-requant") {
      std::string text;
      AOTC_CHOOSE(text, {"auto", "double", "fp32", "dmagic"});  // dmagic: auto's name in v49-v50
      o.int8_requant = text == "fp32"     ? Int8Requant::kFp32
                       : text == "double" ? Int8Requant::kDouble
                       : text == "dmagic" ? Int8Requant::kDmagic
                                          : Int8Requant::kAuto;
    } else if (opt == "--conv-im2col") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.conv_im2col_gemm = text == "on";
    } else if (opt == "--matmul-impl") {
      std::string text;
      AOTC_CHOOSE(text, {"cublaslt", "reference"});
      o.matmul_reference = text == "reference";
    } else if (opt == "--aux-streams") {
      std::string text;
      AOTC_CHOOSE(text, {"0", "1"});
      o.aux_streams = text == "1" ? 1 : 0;
    } else if (opt == "--conv-strided-pointwise") {
      std::string text;
      AOTC_CHOOSE(text, {"gemm", "im2col"});
      o.conv_strided_pointwise_gemm = text == "gemm";
    } else if (opt == "--fp32-gemm") {
      std::string text;
      AOTC_CHOOSE(text, {"auto", "cublaslt", "simt-reduce"});
      o.gemm_fp32_simt = text != "cublaslt";
      o.gemm_fp32_cluster = text == "auto";
    } else if (opt == "--gemm-16bit") {
      std::string text;
      AOTC_CHOOSE(text, {"cublaslt", "cutlass"});
      o.gemm_16bit_cluster = text == "cutlass";
    } else if (opt == "--fp32-gemm-blocks-per-sm") {
      std::string text;
      AOTC_TAKE(text);
      int64_t n = 0;
      if (!parse_int(text, 1, 8, &n))
        return cur.usage("bad --fp32-gemm-blocks-per-sm '" + escape_for_message(text) + "': expected 1 to 8");
      o.simt_gemm_blocks_per_sm = static_cast<int>(n);
    } else if (opt == "--fp32-gemm-max-cluster") {
      std::string text;
      AOTC_CHOOSE(text, {"8", "16"});
      o.simt_gemm_max_cluster = text == "8" ? 8 : 16;
    } else if (opt == "--conv-pw-pair") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.conv_pw_pair = text == "on";
    } else if (opt == "--conv-cluster-max-split") {
      std::string text;
      AOTC_TAKE(text);
      int64_t n = 0;
      if (!parse_int(text, 1, 16, &n))
        return cur.usage("bad --conv-cluster-max-split '" + escape_for_message(text) + "': expected 1 to 16");
      o.conv_cluster_max_split = static_cast<int>(n);
    } else if (opt == "--conv-cluster-warp-groups") {
      std::string text;
      AOTC_CHOOSE(text, {"2", "4"});
      o.conv_cluster_warp_groups = text == "4" ? 4 : 2;
    } else if (opt == "--conv-cluster") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.conv_cluster_splitk = text == "on";
    } else if (opt == "--conv-wgmma") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.conv_wgmma = text == "on";
    } else if (opt == "--conv-wgmma-int8") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.conv_wgmma_int8 = text == "on";
    } else if (opt == "--conv-wgmma-int8-expand") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.conv_wgmma_int8_expand_2cta = text == "on";
    } else if (opt == "--conv-gemm-int8") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "coop", "off"});
      o.conv_gemm_int8 = text == "on" ? ConvGemmInt8::kPingpong : text == "coop" ? ConvGemmInt8::kCooperative : ConvGemmInt8::kOff;
    } else if (opt == "--int8-fuse-residual") {
      std::string text;
      AOTC_CHOOSE(text, {"auto", "on", "off"});
      o.int8_fuse_residual = text == "on"    ? Int8FuseResidual::kOn
                             : text == "off" ? Int8FuseResidual::kOff
                                             : Int8FuseResidual::kGemm;
    } else if (opt == "--int8-epilogue-tile") {
      std::string text;
      AOTC_CHOOSE(text, {"auto", "32", "64", "128"});
      o.int8_epilogue_tile_n = text == "auto" ? 0 : std::stoi(text);
    } else if (opt == "--int8-gemm-tile-n") {
      std::string text;
      AOTC_CHOOSE(text, {"auto", "128", "256"});
      o.int8_gemm_tile_n = text == "auto" ? 0 : std::stoi(text);
    } else if (opt == "--int8-conv-cluster") {
      std::string text;
      AOTC_CHOOSE(text, {"1", "2"});
      o.int8_conv_cluster_m = text == "2" ? 2 : 1;
    } else if (opt == "--conv-wgmma-cluster") {
      std::string text;
      AOTC_CHOOSE(text, {"1", "2"});
      o.conv_wgmma_cluster_m = text == "2" ? 2 : 1;
    } else if (opt == "--conv-wgmma-fill") {
      std::string text;
      AOTC_CHOOSE(text, {"half", "wave"});
      o.conv_wgmma_fill = text == "half" ? 0.5 : 1.0;
    } else if (opt == "--conv-wgmma-pointwise") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.conv_wgmma_pointwise = text == "on";
    } else if (opt == "--gemv") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.gemm_gemv = text == "on";
    } else if (opt == "--pool-gemm") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.pool_gemm = text == "on";
    } else if (opt == "--gemm-wgmma-config") {
      AOTC_TAKE(o.gemm_wgmma_config);
    } else if (opt == "--gemm-wgmma") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.gemm_wgmma = text == "on";
    } else if (opt == "--conv-stem-wgmma") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.conv_stem_wgmma = text == "on";
    } else if (opt == "--l2-prefetch") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.l2_prefetch = text == "on";
    } else if (opt == "--conv-stem") {
      std::string text;
      AOTC_CHOOSE(text, {"direct", "cutlass"});
      o.conv_stem_kernel = text == "direct";
    } else if (opt == "--calib") {
      AOTC_TAKE(o.calib_dir);
    } else if (opt == "--calibrator") {
      AOTC_CHOOSE(o.calibrator, {"entropy", "minmax", "percentile", "mse"});
    } else if (opt == "--percentile") {
      std::string text;
      AOTC_TAKE(text);
      char* end = nullptr;
      double p = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(p > 0 && p <= 100))
        return cur.usage("bad --percentile '" + escape_for_message(text) + "': expected a number in (0, 100]");
      o.percentile = p;
    } else if (opt == "--sensitivity") {
      o.sensitivity = true;
    } else if (opt == "--accuracy-budget") {
      std::string text;
      AOTC_TAKE(text);
      std::string number = text;
      const bool percent = !number.empty() && number.back() == '%';
      if (percent) number.pop_back();
      char* end = nullptr;
      double v = std::strtod(number.c_str(), &end);
      if (number.empty() || *end != '\0' || !(v > 0) || (percent ? v > 100 : v > 1))
        return cur.usage("bad --accuracy-budget '" + escape_for_message(text) +
                         "': expected a relative error such as 1% or 0.01");
      o.accuracy_budget = percent ? v / 100 : v;
      o.sensitivity = true;
    } else if (opt == "--sensitivity-batches") {
      std::string text;
      AOTC_TAKE(text);
      if (!parse_int(text, 1, 1 << 20, &o.sensitivity_batches))
        return cur.usage("bad --sensitivity-batches '" + escape_for_message(text) + "': expected an integer >= 1");
    } else if (opt == "--calib-cache") {
      AOTC_TAKE(o.calib_cache);
    } else if (opt == "--max-batches") {
      std::string text;
      AOTC_TAKE(text);
      if (!parse_int(text, 1, int64_t{1} << 31, &o.max_batches))
        return cur.usage("bad --max-batches '" + escape_for_message(text) + "': expected an integer >= 1");
    } else if (opt == "--tune-matmuls") {
      std::string text;
      AOTC_CHOOSE(text, {"auto", "on", "off"});
      o.tune_matmuls = text;
    } else if (opt == "--pdl") {
      std::string text;
      AOTC_CHOOSE(text, {"off", "wait", "early"});
      o.pdl = text == "off" ? PdlMode::kOff : text == "wait" ? PdlMode::kWait : PdlMode::kEarly;
    } else if (opt == "--attention") {
      std::string text;
      AOTC_CHOOSE(text, {"fused", "fused64", "fused32", "rows"});
      o.attention_fused = text != "rows";
      o.attention_blocks = text == "fused64"   ? AttentionBlocks::k64
                           : text == "fused32" ? AttentionBlocks::k32
                                               : AttentionBlocks::kFillSms;
    } else if (opt == "--attention-sm90") {
      std::string text;
      AOTC_CHOOSE(text, {"on", "off"});
      o.attention_sm90 = text == "on";
    } else if (opt == "--conv-fp32") {
      std::string text;
      AOTC_CHOOSE(text, {"nhwc", "nchw"});
      o.conv_fp32_nhwc = text == "nhwc";
    } else if (opt == "--max-split-k") {
      std::string text;
      AOTC_TAKE(text);
      int64_t n = 0;
      if (!parse_int(text, 1, 16, &n)) return cur.usage("bad --max-split-k '" + escape_for_message(text) + "': expected 1 to 16");
      o.max_split_k = static_cast<int>(n);
    } else if (opt == "--disable-pass") {
      std::string text;
      AOTC_TAKE(text);
      o.disabled_passes.push_back(text);
    } else if (opt == "--report") {
      AOTC_TAKE(o.report_path);
    } else if (opt == "--dump-after") {
      AOTC_TAKE(o.dump_after);
    } else if (opt == "--dump-dir") {
      AOTC_TAKE(o.dump_dir);
    } else if (opt == "--emit-source") {
      AOTC_TAKE(o.emit_source_dir);
    } else if (opt == "--nvcc") {
      AOTC_TAKE(o.nvcc);
    } else if (opt == "--host-cc") {
      AOTC_TAKE(o.host_cc);
    } else if (opt == "--cache-dir") {
      AOTC_TAKE(o.cache_dir);
      if (o.cache_dir.empty()) return cur.usage("--cache-dir needs a directory (or pass --no-cache)");
    } else if (opt == "--no-cache") {
      if (cur.has_inline_value()) return cur.usage("option --no-cache takes no value");
      o.no_cache = true;
    } else if (opt == "--kernel-library") {
      std::string dir;
      AOTC_TAKE(dir);
      if (dir.empty()) return cur.usage("--kernel-library needs a directory");
      o.kernel_library_dirs.push_back(dir);
    } else if (opt == "--add-to-kernel-library") {
      if (cur.has_inline_value()) return cur.usage("option --add-to-kernel-library takes no value");
      o.add_to_kernel_library = true;
    } else if (opt == "--no-kernel-library") {
      if (cur.has_inline_value()) return cur.usage("option --no-kernel-library takes no value");
      o.no_kernel_library = true;
    } else if (opt == "--cutlass-dir") {
      AOTC_TAKE(o.cutlass_dir);
      if (o.cutlass_dir.empty()) return cur.usage("--cutlass-dir needs a directory");
    } else if (opt == "-q" || opt == "--quiet") {
      if (cur.has_inline_value()) return cur.usage("option --quiet takes no value");
      o.quiet = true;
    } else if (!opt.empty() && opt[0] == '-' && opt != "-") {
      return cur.usage("unknown option '" + escape_for_message(opt) + "'");
    } else {
      positional.push_back(opt);
    }
#undef AOTC_TAKE
#undef AOTC_CHOOSE
  }
  if (positional.empty()) return cur.usage("no model given; usage: aotc MODEL.onnx -o libNAME.so");
  if (positional.size() > 1) {
    return cur.usage("more than one model given ('" + escape_for_message(positional[0]) + "', '" +
                     escape_for_message(positional[1]) + "')");
  }
  o.model_path = positional[0];
  if (o.archs.empty()) o.archs.push_back("sm_90");
  if (o.host_cc.empty()) {
    const char* cc = std::getenv("CC");
    o.host_cc = (cc && *cc) ? cc : "cc";
  }
  if (o.nvcc.empty()) o.nvcc = find_nvcc();
  if (!o.dump_dir.empty() && o.dump_after.empty()) return cur.usage("--dump-dir needs --dump-after");
  if (o.io_dtype != "model" && o.io_dtype != o.precision)
    return cur.usage("--io-dtype " + o.io_dtype + " needs --precision " + o.io_dtype + " (the library computes in it)");
  if (o.mode == AotcOptions::Mode::kCheck) return o;
  if (o.mode == AotcOptions::Mode::kCalibrate) {
    if (o.calib_dir.empty() && o.calib_cache.empty())
      return cur.usage("calibrate needs --calib DIR (or a --calib-cache FILE to reuse)");
    if (o.output_path.empty() && o.calib_cache.empty())
      return cur.usage("calibrate needs -o FILE.json or --calib-cache FILE");
    return o;
  }
  if (o.precision == "int8" && o.calib_dir.empty() && o.calib_cache.empty())
    return cur.usage("--precision int8 needs --calib DIR (calibration inputs) or a --calib-cache FILE from `aotc calibrate`");
  if (o.precision != "int8" && (!o.calib_dir.empty() || !o.calib_cache.empty()))
    return cur.usage("--calib and --calib-cache are for --precision int8 (or `aotc calibrate`)");
  if (o.precision != "int8" && o.sensitivity)
    return cur.usage("--accuracy-budget and --sensitivity are for --precision int8 (or `aotc calibrate`)");
  if (o.no_kernel_library && (!o.kernel_library_dirs.empty() || o.add_to_kernel_library))
    return cur.usage("--no-kernel-library contradicts --kernel-library / --add-to-kernel-library");
  if (o.add_to_kernel_library && o.kernel_library_dirs.empty())
    return cur.usage("--add-to-kernel-library needs --kernel-library DIR (the library to add to)");
  if (o.output_path.empty() && o.emit_source_dir.empty()) {
    return cur.usage("no output given; pass -o libNAME.so (or --emit-source DIR)");
  }
  if (o.name.empty()) {
    // With only --emit-source, the model's file name (without .onnx) names the library.
    std::string from = o.output_path;
    if (from.empty()) {
      from = o.model_path;
      if (from.size() > 5 && from.compare(from.size() - 5, 5, ".onnx") == 0) from.resize(from.size() - 5);
    }
    auto name = abi_name_from_path(from);
    if (!name) return name.status();
    o.name = *name;
  }
  return o;
}

Expected<RunOptions> parse_run_args(const std::vector<std::string>& args) {
  RunOptions o;
  ArgCursor cur(args, kRunHint);
  std::vector<std::string> positional;
  while (!cur.done()) {
    std::string opt = cur.next();
    auto take = [&](std::string* var) -> Status {
      auto v = cur.value(opt);
      if (!v) return v.status();
      *var = *v;
      return Status::ok();
    };
    auto take_int = [&](int64_t min, int64_t max, int64_t* out) -> Status {
      std::string text;
      AOTC_RETURN_IF_ERROR(take(&text));
      if (!parse_int(text, min, max, out)) {
        return cur.usage("bad " + opt + " '" + escape_for_message(text) + "': expected an integer in [" +
                         std::to_string(min) + ", " + std::to_string(max) + "]");
      }
      return Status::ok();
    };
    auto take_double = [&](double* out) -> Status {
      std::string text;
      AOTC_RETURN_IF_ERROR(take(&text));
      if (!parse_double(text, out)) {
        return cur.usage("bad " + opt + " '" + escape_for_message(text) + "': expected a number >= 0");
      }
      return Status::ok();
    };
    int64_t n = 0;
    std::string s;
    if (opt == "-h" || opt == "--help") {
      o.mode = RunOptions::Mode::kHelp;
      return o;
    } else if (opt == "--info") {
      o.mode = RunOptions::Mode::kInfo;
    } else if (opt == "--name") {
      AOTC_RETURN_IF_ERROR(take(&o.name));
      AOTC_RETURN_IF_ERROR(check_abi_name(o.name));
    } else if (opt == "--input") {
      AOTC_RETURN_IF_ERROR(take(&s));
      if (s.find('=') == std::string::npos) {
        return cur.usage("bad --input '" + escape_for_message(s) + "': expected NAME=FILE or INDEX=FILE");
      }
      o.input_specs.push_back(s);
    } else if (opt == "--seed") {
      AOTC_RETURN_IF_ERROR(take_int(0, INT64_MAX, &n));
      o.seed = static_cast<uint64_t>(n);
    } else if (opt == "--output-dir") {
      AOTC_RETURN_IF_ERROR(take(&o.output_dir));
    } else if (opt == "--expect") {
      AOTC_RETURN_IF_ERROR(take(&s));
      o.expect_files.push_back(s);
    } else if (opt == "--expect-dir") {
      AOTC_RETURN_IF_ERROR(take(&o.expect_dir));
    } else if (opt == "--atol") {
      AOTC_RETURN_IF_ERROR(take_double(&o.atol));
      o.atol_set = true;
    } else if (opt == "--rtol") {
      AOTC_RETURN_IF_ERROR(take_double(&o.rtol));
      o.rtol_set = true;
    } else if (opt == "--model-metric") {
      o.model_metric = true;
    } else if (opt == "--bench") {
      AOTC_RETURN_IF_ERROR(take_int(1, 1000000, &n));
      o.bench_runs = static_cast<int>(n);
    } else if (opt == "--warmup") {
      AOTC_RETURN_IF_ERROR(take_int(0, 1000000, &n));
      o.warmup_runs = static_cast<int>(n);
    } else if (opt == "--json") {
      AOTC_RETURN_IF_ERROR(take(&o.json_path));
    } else if (opt == "--profile") {
      o.profile = true;
    } else if (opt == "--profile-json") {
      AOTC_RETURN_IF_ERROR(take(&o.profile_json_path));
      o.profile = true;
    } else if (opt == "--profile-iters") {
      AOTC_RETURN_IF_ERROR(take_int(1, 100000, &n));
      o.profile_iters = static_cast<int>(n);
    } else if (opt == "--profile-top") {
      AOTC_RETURN_IF_ERROR(take_int(1, 1000000, &n));
      o.profile_top = static_cast<int>(n);
    } else if (opt == "--device") {
      AOTC_RETURN_IF_ERROR(take_int(0, 1024, &n));
      o.device = static_cast<int>(n);
    } else if (opt == "-q" || opt == "--quiet") {
      o.quiet = true;
    } else if (!opt.empty() && opt[0] == '-' && opt != "-") {
      return cur.usage("unknown option '" + escape_for_message(opt) + "'");
    } else {
      positional.push_back(opt);
    }
  }
  if (positional.empty()) return cur.usage("no library given; usage: aotc-run libNAME.so [options]");
  o.library_path = positional[0];
  o.positional_inputs.assign(positional.begin() + 1, positional.end());
  if (!o.expect_files.empty() && !o.expect_dir.empty()) {
    return cur.usage("--expect and --expect-dir exclude each other");
  }
  if (!o.positional_inputs.empty() && !o.input_specs.empty()) {
    return cur.usage("give inputs either by position or with --input, not both");
  }
  if (o.name.empty()) {
    auto name = abi_name_from_path(o.library_path);
    if (!name) return name.status();
    o.name = *name;
  }
  return o;
}

}  // namespace aotc
