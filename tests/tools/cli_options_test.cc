// Argument parsing of aotc and aotc-run (tools/cli_options.h): name derivation, validation of
// --arch / --input-shape / --name / --precision, and one-line usage errors with a hint.
#include "tools/cli_options.h"

#include <gtest/gtest.h>

namespace aotc {
namespace {

using Args = std::vector<std::string>;

std::string error_of(const Args& args) {
  auto r = parse_aotc_args(args);
  EXPECT_FALSE(r.is_ok());
  return r.is_ok() ? "" : r.status().message();
}

TEST(AbiName, DerivedFromOutputPath) {
  EXPECT_EQ(*abi_name_from_path("libresnet50.so"), "resnet50");
  EXPECT_EQ(*abi_name_from_path("out/dir.x/libres-net.v2.so"), "res_net_v2");
  EXPECT_EQ(*abi_name_from_path("model.so"), "model");
  EXPECT_EQ(*abi_name_from_path("/abs/libfoo"), "foo");
  EXPECT_EQ(*abi_name_from_path("lib_x.so"), "_x");
  // "lib" alone and ".so" alone are names, not affixes to strip.
  EXPECT_EQ(*abi_name_from_path("lib.so"), "lib");
  EXPECT_EQ(*abi_name_from_path("libm\xc3\xa9.so"), "m__");  // two UTF-8 bytes, two '_' 
}

TEST(AbiName, RefusesNamesThatAreNotIdentifiers) {
  auto digit = abi_name_from_path("lib3d.so");
  ASSERT_FALSE(digit.is_ok());
  EXPECT_NE(digit.status().message().find("--name"), std::string::npos);
  EXPECT_FALSE(abi_name_from_path("dir/").is_ok());
  EXPECT_TRUE(check_abi_name("resnet50").is_ok());
  EXPECT_TRUE(check_abi_name("_m").is_ok());
  EXPECT_FALSE(check_abi_name("3d").is_ok());
  EXPECT_FALSE(check_abi_name("a-b").is_ok());
  EXPECT_FALSE(check_abi_name("").is_ok());
  EXPECT_FALSE(check_abi_name(std::string(65, 'a')).is_ok());
}

TEST(AotcArgs, DefaultsAndNameFromOutput) {
  auto r = parse_aotc_args({"model.onnx", "-o", "build/libtiny_cnn.so"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->mode, AotcOptions::Mode::kCompile);
  EXPECT_EQ(r->model_path, "model.onnx");
  EXPECT_EQ(r->name, "tiny_cnn");
  EXPECT_EQ(r->archs, (std::vector<std::string>{"sm_90"}));
  EXPECT_EQ(r->batch, 1);
  EXPECT_FALSE(r->nvcc.empty());
  EXPECT_FALSE(r->host_cc.empty());
}

TEST(AotcArgs, EmitSourceAloneNamesFromModel) {
  auto r = parse_aotc_args({"models/mobilenet-v2.onnx", "--emit-source", "src"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->name, "mobilenet_v2");
  EXPECT_EQ(r->output_path, "");
}

TEST(AotcArgs, EveryOption) {
  auto r = parse_aotc_args({"--arch", "sm_90,sm_87", "--arch=sm_90", "--arch", "sm_100a", "m.onnx", "-o", "libx.so",
                            "--name", "net", "--input-shape", "in:1x3x224x224", "--input-shape=a:b:scalar",
                            "--batch", "8", "--precision", "fp32", "--report", "r.json", "--dump-after",
                            "all", "--dump-dir", "d", "--emit-source", "src", "--nvcc", "/x/nvcc",
                            "--host-cc", "aarch64-linux-gnu-gcc", "--quiet"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->archs, (std::vector<std::string>{"sm_90", "sm_87", "sm_100a"}));
  EXPECT_EQ(r->name, "net");
  EXPECT_EQ(r->input_shapes.at("in"), (Shape{1, 3, 224, 224}));
  EXPECT_EQ(r->input_shapes.at("a:b"), Shape{});  // the LAST ':' separates; names may hold ':'
  EXPECT_EQ(r->batch, 8);
  EXPECT_EQ(r->report_path, "r.json");
  EXPECT_EQ(r->dump_after, "all");
  EXPECT_EQ(r->dump_dir, "d");
  EXPECT_EQ(r->emit_source_dir, "src");
  EXPECT_EQ(r->nvcc, "/x/nvcc");
  EXPECT_EQ(r->host_cc, "aarch64-linux-gnu-gcc");
  EXPECT_TRUE(r->quiet);
}

TEST(AotcArgs, BadArch) {
  for (const char* bad : {"sm90", "sm_9", "compute90", "compute_9", "sm_90,", "sm_90,,sm_87", "sm_9000", "sm_90b", ""}) {
    std::string e = error_of({"m.onnx", "-o", "libm.so", "--arch", bad});
    EXPECT_NE(e.find("--arch"), std::string::npos) << bad << ": " << e;
  }
}

TEST(AotcArgs, BadInputShape) {
  for (const char* bad : {"x", ":1x2", "x:1x-2", "x:1xx2", "x:", "x:1x2.5", "x:abc", "x:99999999999999999999"}) {
    std::string e = error_of({"m.onnx", "-o", "libm.so", "--input-shape", bad});
    EXPECT_NE(e.find("--input-shape"), std::string::npos) << bad << ": " << e;
  }
  std::string twice = error_of({"m.onnx", "-o", "libm.so", "--input-shape", "x:1", "--input-shape", "x:2"});
  EXPECT_NE(twice.find("twice"), std::string::npos);
}

TEST(AotcArgs, UsageErrorsAreOneLineWithHint) {
  for (const Args& args : std::vector<Args>{{"m.onnx", "-o", "libm.so", "--frobnicate"},
                                            {"m.onnx", "-o"},
                                            {},
                                            {"a.onnx", "b.onnx", "-o", "libm.so"},
                                            {"m.onnx"},
                                            {"m.onnx", "-o", "libm.so", "--batch", "0"},
                                            {"m.onnx", "-o", "libm.so", "--precision", "fp64"},
                                            {"m.onnx", "-o", "libm.so", "--dump-dir", "d"}}) {
    std::string e = error_of(args);
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_NE(e.find("aotc --help"), std::string::npos) << e;
  }
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--frobnicate"}).find("'--frobnicate'"), std::string::npos);
}

// Every option with a fixed set of values (one table of choices in the parser): each value is
// accepted, in both spellings, and anything else is refused in one line listing the values.
TEST(AotcArgs, ChoiceOptionsAcceptTheirValuesAndListThemOnRefusal) {
  struct Case {
    const char* option;
    std::vector<const char*> values;
    const char* listed;
  };
  const std::vector<Case> cases = {
      {"--precision", {"fp32", "fp16", "bf16"}, "fp32, fp16, bf16 or int8"},
      {"--io-dtype", {"model"}, "model, fp16 or bf16"},  // fp16 / bf16 need that --precision
      {"--conv-pointwise", {"cublaslt", "cutlass"}, "cublaslt or cutlass"},
      {"--conv-im2col", {"on", "off"}, "on or off"},
      {"--matmul-impl", {"cublaslt", "reference"}, "cublaslt or reference"},
      {"--aux-streams", {"0", "1"}, "0 or 1"},
      {"--conv-strided-pointwise", {"gemm", "im2col"}, "gemm or im2col"},
      {"--conv-stem", {"direct", "cutlass"}, "direct or cutlass"},
      {"--conv-cluster", {"on", "off"}, "on or off"},
      {"--conv-cluster-warp-groups", {"2", "4"}, "2 or 4"},
      {"--conv-pw-pair", {"on", "off"}, "on or off"},
      {"--fp32-gemm", {"auto", "cublaslt", "simt-reduce"}, "auto, cublaslt or simt-reduce"},
      {"--fp32-gemm-max-cluster", {"8", "16"}, "8 or 16"},
      {"--gemm-16bit", {"cublaslt", "cutlass"}, "cublaslt or cutlass"},
      {"--depthwise-tile", {"cb-first", "tow-first"}, "cb-first or tow-first"},
      {"--tune-matmuls", {"auto", "on", "off"}, "auto, on or off"},
      {"--pdl", {"off", "wait", "early"}, "off, wait or early"},
      {"--attention", {"fused", "fused64", "fused32", "rows"}, "fused, fused64, fused32 or rows"},
      {"--gemm-wgmma", {"on", "off"}, "on or off"},
      {"--conv-fp32", {"nhwc", "nchw"}, "nhwc or nchw"},
  };
  for (const Case& c : cases) {
    for (const char* v : c.values) {
      EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so", c.option, v}).is_ok()) << c.option << " " << v;
      EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so", std::string(c.option) + "=" + v}).is_ok())
          << c.option << "=" << v;
    }
    const std::string e = error_of({"m.onnx", "-o", "libm.so", c.option, "bogus\n"});
    EXPECT_EQ(e, std::string("bad ") + c.option + " 'bogus\\x0a': expected " + c.listed + " (see aotc --help)");
  }
  EXPECT_EQ(error_of({"m.onnx", "-o", "libm.so", "--calibrator", "avg"}),
            "bad --calibrator 'avg': expected entropy, minmax, percentile or mse (see aotc --help)");
}

TEST(AotcArgs, PrecisionInt8NeedsCalibrationAndCalibrationNeedsInt8) {
  std::string e = error_of({"m.onnx", "-o", "libm.so", "--precision", "int8"});
  EXPECT_NE(e.find("--calib DIR"), std::string::npos) << e;
  auto o = parse_aotc_args({"m.onnx", "-o", "libm.so", "--precision", "int8", "--calib", "d", "--accuracy-budget", "1%"});
  ASSERT_TRUE(o.is_ok()) << o.status().message();
  EXPECT_EQ(o->precision, "int8");
  EXPECT_DOUBLE_EQ(o->accuracy_budget, 0.01);
  EXPECT_TRUE(o->sensitivity);
  EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--precision", "int8", "--calib-cache", "c.json"}).is_ok());
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--calib", "d"}).find("--precision int8"), std::string::npos);
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--precision", "fp16", "--accuracy-budget", "1%"}).find("--precision int8"),
            std::string::npos);
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--precision", "fp8"}).find("--precision"), std::string::npos);
}

TEST(AotcArgs, PrecisionKeepFp32DisablePassSplitKAndPtxArch) {
  auto o = parse_aotc_args({"m.onnx", "-o", "libm.so", "--precision", "fp16", "--keep-fp32", "conv1,Softmax",
                            "--keep-fp32", "Exp", "--disable-pass", "layout_nhwc", "--max-split-k", "4",
                            "--arch", "sm_90,compute_87"});
  ASSERT_TRUE(o.is_ok()) << o.status().message();
  EXPECT_EQ(o->precision, "fp16");
  EXPECT_EQ(o->keep_fp32, (std::vector<std::string>{"conv1", "Softmax", "Exp"}));
  EXPECT_EQ(o->disabled_passes, (std::vector<std::string>{"layout_nhwc"}));
  EXPECT_EQ(o->max_split_k, 4);
  EXPECT_EQ(o->archs, (std::vector<std::string>{"sm_90", "compute_87"}));
  EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--precision", "bf16"}).is_ok());
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--max-split-k", "0"}).find("--max-split-k"), std::string::npos);
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--keep-fp32", "a,,b"}).find("--keep-fp32"), std::string::npos);
}

TEST(AotcArgs, AttentionStrategySwitch) {
  auto o = parse_aotc_args({"m.onnx", "-o", "libm.so"});
  ASSERT_TRUE(o.is_ok());
  EXPECT_TRUE(o->attention_fused);
  EXPECT_EQ(o->attention_blocks, AttentionBlocks::kFillSms);
  auto rows = parse_aotc_args({"m.onnx", "-o", "libm.so", "--attention", "rows"});
  ASSERT_TRUE(rows.is_ok()) << rows.status().message();
  EXPECT_FALSE(rows->attention_fused);
  auto f64 = parse_aotc_args({"m.onnx", "-o", "libm.so", "--attention", "fused64"});
  ASSERT_TRUE(f64.is_ok()) << f64.status().message();
  EXPECT_TRUE(f64->attention_fused);
  EXPECT_EQ(f64->attention_blocks, AttentionBlocks::k64);
  auto f32 = parse_aotc_args({"m.onnx", "-o", "libm.so", "--attention", "fused32"});
  ASSERT_TRUE(f32.is_ok()) << f32.status().message();
  EXPECT_TRUE(f32->attention_fused);
  EXPECT_EQ(f32->attention_blocks, AttentionBlocks::k32);
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--attention", "flash"}).find("--attention"), std::string::npos);
}

TEST(AotcArgs, ConvStrategySwitches) {
  auto d = parse_aotc_args({"m.onnx", "-o", "libm.so"});
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_TRUE(d->conv_fp32_nhwc);
  EXPECT_TRUE(d->conv_pointwise_gemm);
  EXPECT_TRUE(d->conv_im2col_gemm);
  EXPECT_TRUE(d->conv_strided_pointwise_gemm);
  EXPECT_TRUE(d->conv_cluster_splitk);
  EXPECT_FALSE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--conv-cluster", "off"})->conv_cluster_splitk);
  EXPECT_EQ(d->conv_cluster_max_split, 6);
  EXPECT_FALSE(d->conv_pw_pair);
  EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--conv-pw-pair", "on"})->conv_pw_pair);
  EXPECT_EQ(parse_aotc_args({"m.onnx", "-o", "libm.so", "--conv-cluster-max-split", "12"})->conv_cluster_max_split, 12);
  EXPECT_EQ(parse_aotc_args({"m.onnx", "-o", "libm.so"})->conv_cluster_warp_groups, 2);
  EXPECT_EQ(parse_aotc_args({"m.onnx", "-o", "libm.so", "--conv-cluster-warp-groups", "4"})->conv_cluster_warp_groups, 4);
  for (const char* bad : {"0", "17", "8x"})
    EXPECT_EQ(error_of({"m.onnx", "-o", "libm.so", "--conv-cluster-max-split", bad}),
              std::string("bad --conv-cluster-max-split '") + bad + "': expected 1 to 16 (see aotc --help)");
  EXPECT_FALSE(d->conv_wgmma_pointwise);
  EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--conv-wgmma-pointwise", "on"})->conv_wgmma_pointwise);
  EXPECT_TRUE(d->l2_prefetch);
  EXPECT_FALSE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--l2-prefetch", "off"})->l2_prefetch);
  EXPECT_FALSE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--l2-prefetch", "maybe"}).is_ok());
  EXPECT_TRUE(d->gemm_fp32_simt);
  EXPECT_EQ(d->simt_gemm_blocks_per_sm, 3);
  EXPECT_TRUE(d->gemm_fp32_cluster);
  EXPECT_EQ(d->simt_gemm_max_cluster, 8);
  EXPECT_EQ(parse_aotc_args({"m.onnx", "-o", "libm.so", "--fp32-gemm-max-cluster", "16"})->simt_gemm_max_cluster, 16);
  EXPECT_FALSE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--fp32-gemm", "cublaslt"})->gemm_fp32_simt);
  EXPECT_FALSE(parse_aotc_args({"m.onnx", "-o", "libm.so"})->gemm_16bit_cluster);
  EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so"})->epilogue_excluded.empty());
  EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so"})->depthwise_tile_tow_first);
  EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--depthwise-tile", "tow-first"})->depthwise_tile_tow_first);
  EXPECT_FALSE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--depthwise-tile", "cb-first"})->depthwise_tile_tow_first);
  // The tensor-op few-row GEMM table's rows are --conv-config names too (--gemm-16bit cutlass).
  EXPECT_EQ(parse_aotc_args({"m.onnx", "-o", "libm.so", "--conv-config", "hgemm64x128x32_w32x64_s4"})->conv_config,
            "hgemm64x128x32_w32x64_s4");
  EXPECT_EQ(parse_aotc_args({"m.onnx", "-o", "libm.so", "--epilogue-exclude", "Swish,Gelu", "--epilogue-exclude",
                             "Relu"})->epilogue_excluded,
            (std::vector<std::string>{"Swish", "Gelu", "Relu"}));
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--epilogue-exclude", "Swish,"}).find("--epilogue-exclude"),
            std::string::npos);
  EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--gemm-16bit", "cutlass"})->gemm_16bit_cluster);
  auto reduce = parse_aotc_args({"m.onnx", "-o", "libm.so", "--fp32-gemm", "simt-reduce"});
  ASSERT_TRUE(reduce.is_ok());
  EXPECT_TRUE(reduce->gemm_fp32_simt);
  EXPECT_FALSE(reduce->gemm_fp32_cluster);
  EXPECT_EQ(parse_aotc_args({"m.onnx", "-o", "libm.so", "--fp32-gemm-blocks-per-sm", "4"})->simt_gemm_blocks_per_sm, 4);
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--fp32-gemm-blocks-per-sm", "9"}).find("--fp32-gemm-blocks-per-sm"),
            std::string::npos);
  EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--conv-config", "sgemm128x64x8_w64x32_s4"}).is_ok());
  EXPECT_FALSE(d->matmul_reference);
  EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--matmul-impl", "reference"})->matmul_reference);
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--matmul-impl", "cutlass"}).find("--matmul-impl"), std::string::npos);
  auto o = parse_aotc_args({"m.onnx", "-o", "libm.so", "--conv-fp32", "nchw", "--conv-pointwise", "cutlass",
                            "--conv-im2col", "off", "--conv-config", "simt128x64x8_w64x32_s4",
                            "--conv-strided-pointwise", "im2col"});
  ASSERT_TRUE(o.is_ok()) << o.status().message();
  EXPECT_FALSE(o->conv_fp32_nhwc);
  EXPECT_FALSE(o->conv_pointwise_gemm);
  EXPECT_FALSE(o->conv_im2col_gemm);
  EXPECT_FALSE(o->conv_strided_pointwise_gemm);
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--conv-strided-pointwise", "cutlass"}).find("--conv-strided-pointwise"),
            std::string::npos);
  EXPECT_EQ(o->conv_config, "simt128x64x8_w64x32_s4");
  EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--conv-fp32=nhwc"})->conv_fp32_nhwc);
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--conv-fp32", "tf32"}).find("--conv-fp32"), std::string::npos);
  EXPECT_NE(aotc_usage().find("--conv-fp32"), std::string::npos);
}

TEST(AotcArgs, NameMustBeIdentifier) {
  EXPECT_NE(error_of({"m.onnx", "-o", "libm.so", "--name", "9lives"}).find("--name"), std::string::npos);
  EXPECT_NE(error_of({"m.onnx", "-o", "lib9lives.so"}).find("--name"), std::string::npos);
  EXPECT_TRUE(parse_aotc_args({"m.onnx", "-o", "lib9lives.so", "--name", "lives"}).is_ok());
}

TEST(AotcArgs, HelpVersionCheck) {
  EXPECT_EQ(parse_aotc_args({"--help"})->mode, AotcOptions::Mode::kHelp);
  EXPECT_EQ(parse_aotc_args({"m.onnx", "-h"})->mode, AotcOptions::Mode::kHelp);
  EXPECT_EQ(parse_aotc_args({"--version"})->mode, AotcOptions::Mode::kVersion);
  auto check = parse_aotc_args({"check", "m.onnx", "--input-shape", "x:2x3"});
  ASSERT_TRUE(check.is_ok()) << check.status().message();
  EXPECT_EQ(check->mode, AotcOptions::Mode::kCheck);
  EXPECT_EQ(check->model_path, "m.onnx");
  // "check" is a subcommand only in first position: later it is a model file name.
  EXPECT_EQ(parse_aotc_args({"-o", "libm.so", "check"})->model_path, "check");
  // Every option the parser knows is in the help text.
  std::string help = aotc_usage();
  for (const char* opt : {"-o", "--name", "--arch", "--input-shape", "--batch", "--precision", "--report",
                          "--dump-after", "--dump-dir", "--emit-source", "--nvcc", "--host-cc", "--quiet",
                          "--version", "--help", "aotc check"}) {
    EXPECT_NE(help.find(opt), std::string::npos) << opt;
  }
}

TEST(RunArgs, ParsesAndDerivesName) {
  auto r = parse_run_args({"build/libtiny_cnn.so", "--input", "x=a.npy", "--seed", "7", "--expect-dir", "d",
                           "--atol", "1e-3", "--rtol=0", "--model-metric", "--bench", "50", "--warmup", "3",
                           "--json", "out.json", "--output-dir", "o", "--device", "1"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->name, "tiny_cnn");
  EXPECT_EQ(r->input_specs, (std::vector<std::string>{"x=a.npy"}));
  EXPECT_EQ(r->seed, 7u);
  EXPECT_TRUE(r->atol_set);
  EXPECT_DOUBLE_EQ(r->atol, 1e-3);
  EXPECT_TRUE(r->rtol_set);
  EXPECT_DOUBLE_EQ(r->rtol, 0);
  EXPECT_TRUE(r->model_metric);
  EXPECT_EQ(r->bench_runs, 50);
  EXPECT_EQ(r->warmup_runs, 3);
  EXPECT_EQ(r->device, 1);
  auto pos = parse_run_args({"libm.so", "a.pb", "b.npy", "--name", "net"});
  ASSERT_TRUE(pos.is_ok());
  EXPECT_EQ(pos->positional_inputs, (std::vector<std::string>{"a.pb", "b.npy"}));
  EXPECT_EQ(pos->name, "net");
}

TEST(RunArgs, ProfileOptions) {
  auto plain = parse_run_args({"libm.so"});
  ASSERT_TRUE(plain.is_ok());
  EXPECT_FALSE(plain->profile);
  EXPECT_EQ(plain->profile_iters, 20);
  auto r = parse_run_args({"libm.so", "--profile", "--profile-iters", "7", "--profile-top", "3"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->profile);
  EXPECT_EQ(r->profile_iters, 7);
  EXPECT_EQ(r->profile_top, 3);
  EXPECT_TRUE(r->profile_json_path.empty());
  auto j = parse_run_args({"libm.so", "--profile-json", "p.json"});  // implies --profile
  ASSERT_TRUE(j.is_ok()) << j.status().message();
  EXPECT_TRUE(j->profile);
  EXPECT_EQ(j->profile_json_path, "p.json");
  for (const Args& bad : std::vector<Args>{{"libm.so", "--profile-iters", "0"},
                                           {"libm.so", "--profile-top", "x"},
                                           {"libm.so", "--profile-json"}}) {
    auto b = parse_run_args(bad);
    EXPECT_FALSE(b.is_ok()) << bad[1];
  }
  const std::string help = run_usage();
  for (const char* opt : {"--profile ", "--profile-iters", "--profile-top", "--profile-json"})
    EXPECT_NE(help.find(opt), std::string::npos) << opt;
}

TEST(RunArgs, Refusals) {
  for (const Args& args : std::vector<Args>{{},
                                            {"libm.so", "--bogus"},
                                            {"libm.so", "--bench", "0"},
                                            {"libm.so", "--bench", "x"},
                                            {"libm.so", "--atol", "-1"},
                                            {"libm.so", "--atol", "nan"},
                                            {"libm.so", "--input", "nofile"},
                                            {"libm.so", "--expect", "a.pb", "--expect-dir", "d"},
                                            {"libm.so", "a.pb", "--input", "x=b.pb"},
                                            {"lib3.so"}}) {
    auto r = parse_run_args(args);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

TEST(AotcArgs, KernelCacheAndCutlassOptions) {
  auto plain = parse_aotc_args({"m.onnx", "-o", "libm.so"});
  ASSERT_TRUE(plain.is_ok());
  EXPECT_FALSE(plain->no_cache);
  EXPECT_EQ(plain->cache_dir, "");
  EXPECT_EQ(plain->cutlass_dir, "");
  auto set = parse_aotc_args({"m.onnx", "-o", "libm.so", "--cache-dir", "/tmp/c", "--no-cache",
                              "--cutlass-dir=/opt/cutlass"});
  ASSERT_TRUE(set.is_ok()) << set.status().message();
  EXPECT_EQ(set->cache_dir, "/tmp/c");
  EXPECT_TRUE(set->no_cache);
  EXPECT_EQ(set->cutlass_dir, "/opt/cutlass");
  auto empty = parse_aotc_args({"m.onnx", "-o", "libm.so", "--cache-dir="});
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("--no-cache"), std::string::npos);
  EXPECT_FALSE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--no-cache=1"}).is_ok());
  EXPECT_FALSE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--cutlass-dir"}).is_ok());
  for (const char* opt : {"--cache-dir", "--no-cache", "--cutlass-dir", "nvidia-cutlass"})
    EXPECT_NE(aotc_usage().find(opt), std::string::npos) << opt;
}

TEST(CliOptions, KernelLibraryOptions) {
  auto plain = parse_aotc_args({"m.onnx", "-o", "libm.so"});
  ASSERT_TRUE(plain.is_ok());
  EXPECT_TRUE(plain->kernel_library_dirs.empty());
  EXPECT_FALSE(plain->add_to_kernel_library);
  EXPECT_FALSE(plain->no_kernel_library);
  auto two = parse_aotc_args({"m.onnx", "-o", "libm.so", "--kernel-library", "/a", "--kernel-library=/b",
                              "--add-to-kernel-library"});
  ASSERT_TRUE(two.is_ok()) << two.status().message();
  EXPECT_EQ(two->kernel_library_dirs, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_TRUE(two->add_to_kernel_library);
  auto off = parse_aotc_args({"m.onnx", "-o", "libm.so", "--no-kernel-library"});
  ASSERT_TRUE(off.is_ok());
  EXPECT_TRUE(off->no_kernel_library);
  auto add_alone = parse_aotc_args({"m.onnx", "-o", "libm.so", "--add-to-kernel-library"});
  ASSERT_FALSE(add_alone.is_ok());
  EXPECT_NE(add_alone.status().message().find("needs --kernel-library"), std::string::npos);
  EXPECT_FALSE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--no-kernel-library", "--kernel-library", "/a"}).is_ok());
  EXPECT_FALSE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--kernel-library="}).is_ok());
  EXPECT_FALSE(parse_aotc_args({"m.onnx", "-o", "libm.so", "--add-to-kernel-library=1", "--kernel-library", "/a"}).is_ok());
  for (const char* opt : {"--kernel-library", "--add-to-kernel-library", "--no-kernel-library", "AOTC_KERNEL_LIBRARY"})
    EXPECT_NE(aotc_usage().find(opt), std::string::npos) << opt;
}

}  // namespace
}  // namespace aotc
