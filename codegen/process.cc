// fork + execvp with captured output (see process.h).
#include "codegen/process.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace aotc {
namespace {
constexpr size_t kMaxCapturedBytes = 16 * 1024;
}

std::string join_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    out += a;
  }
  return out;
}

Expected<ProcessResult> run_process(const std::vector<std::string>& argv,
                                    const std::string& working_dir) {
  if (argv.empty()) return Status::error("run_process: empty command");
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return Status::error("cannot create a pipe for '" + argv[0] + "': " + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Status::error("cannot fork to run '" + argv[0] + "': " + std::strerror(errno));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    if (!working_dir.empty() && chdir(working_dir.c_str()) != 0) _exit(126);
    execvp(cargv[0], cargv.data());
    static const char kMsg[] = "aotc: exec failed (command not found?)\n";
    ssize_t ignored = write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
    (void)ignored;
    _exit(127);
  }
  close(fds[1]);
  ProcessResult result;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.output.append(buf, static_cast<size_t>(n));
    if (result.output.size() > 2 * kMaxCapturedBytes)
      result.output.erase(0, result.output.size() - kMaxCapturedBytes);
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::error("waitpid failed for '" + argv[0] + "'");
  }
  if (result.output.size() > kMaxCapturedBytes)
    result.output.erase(0, result.output.size() - kMaxCapturedBytes);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (result.exit_code == 127 && result.output.find("aotc: exec failed") != std::string::npos)
    return Status::error("cannot run '" + argv[0] + "': not found or not executable");
  return result;
}

}  // namespace aotc
