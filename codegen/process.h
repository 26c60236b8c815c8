// Running external tools (nvcc, the host C compiler) with a fixed argument vector: fork + execvp,
// never a shell, so nothing in a path or model can be interpreted as shell syntax. stdout and
// stderr are captured together for the error message.
#pragma once

#include <string>
#include <vector>

#include "ir/status.h"

namespace aotc {

struct ProcessResult {
  int exit_code = -1;   // -1 when killed by a signal
  std::string output;   // stdout + stderr, possibly truncated to the last 16 KiB
};

// Runs argv[0] (looked up in PATH when it has no '/') in `working_dir` (empty: the current one).
// A Status error only when the process could not be started; a non-zero exit is in the result.
Expected<ProcessResult> run_process(const std::vector<std::string>& argv,
                                    const std::string& working_dir = "");

// "nvcc -O3 ..." for messages and Makefiles (arguments are space-joined, not shell-quoted).
std::string join_command(const std::vector<std::string>& argv);

}  // namespace aotc
